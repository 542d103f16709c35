#!/bin/sh
# Starts Redis with one ACL user per service (and ops), each limited to its own keys; the default
# user is off, so a client without a user and password is refused. Passwords come from the
# environment (REDIS_<USER>_PASSWORD). Generated from shared/ops/store-users.ts by
# `npm run -s deploy:config`: change that module, not this file.
set -eu
umask 077
acl=/tmp/users.acl
{
  echo "user default off"
  echo "user gateway on >$REDIS_GATEWAY_PASSWORD resetkeys ~rounds-cache-gateway.* ~rounds-cache-health:ready ~rounds-ratelimit:* resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user auth on >$REDIS_AUTH_PASSWORD resetkeys ~rounds-cache-auth.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user users on >$REDIS_USERS_PASSWORD resetkeys ~rounds-cache-users.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user rounds on >$REDIS_ROUNDS_PASSWORD resetkeys ~rounds-cache-rounds.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user stores on >$REDIS_STORES_PASSWORD resetkeys ~rounds-cache-stores.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user settings on >$REDIS_SETTINGS_PASSWORD resetkeys ~rounds-cache-settings.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user notifier on >$REDIS_NOTIFIER_PASSWORD resetkeys ~rounds-cache-notifier.* ~rounds-cache-health:ready resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
  echo "user ops on >$REDIS_OPS_PASSWORD resetkeys ~rounds-* resetchannels -@all +@read +@write +@keyspace +@transaction +@connection -@dangerous +info"
} > "$acl"
exec redis-server --aclfile "$acl" "$@"
