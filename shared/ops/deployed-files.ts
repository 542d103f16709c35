/** The deployment files generated from the users modules, by path (bin/deploy-config.ts writes them). */
import { DEPLOYED_NATS, renderNatsConf } from "./nats-auth";
import { renderMongoInit, renderRedisStart } from "./store-users";

export const DEPLOYED_GENERATED = (): Record<string, string> => ({
  "deploy/nats/nats.conf": renderNatsConf(DEPLOYED_NATS),
  "deploy/redis/start.sh": renderRedisStart(DEPLOYED_NATS.namespace),
  "deploy/mongo/init-users.js": renderMongoInit(DEPLOYED_NATS.namespace),
});
