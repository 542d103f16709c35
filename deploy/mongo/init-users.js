// Runs once, when MongoDB starts on an empty data folder (/docker-entrypoint-initdb.d): one user per
// service that keeps documents, with readWrite on the platform's database and nothing else. Passwords
// come from the environment (MONGO_<USER>_PASSWORD). Generated from shared/ops/store-users.ts
// by `npm run -s deploy:config`: change that module, not this file.
const platform = db.getSiblingDB("rounds");
for (const u of [
  { user: "auth", pwd: process.env.MONGO_AUTH_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
  { user: "users", pwd: process.env.MONGO_USERS_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
  { user: "rounds", pwd: process.env.MONGO_ROUNDS_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
  { user: "stores", pwd: process.env.MONGO_STORES_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
  { user: "settings", pwd: process.env.MONGO_SETTINGS_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
  { user: "notifier", pwd: process.env.MONGO_NOTIFIER_PASSWORD, roles: [{ role: "readWrite", db: "rounds" }] },
]) {
  if (!u.pwd) throw new Error(`no password for the MongoDB user ${u.user}`);
  platform.createUser(u);
}
