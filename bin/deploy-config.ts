/**
 * `npm run -s deploy:config`: rewrites the generated deployment files from the modules that describe
 * the users of NATS, Redis and MongoDB (shared/ops/nats-auth.ts, shared/ops/store-users.ts):
 * deploy/nats/nats.conf, deploy/redis/start.sh and deploy/mongo/init-users.js. The cluster tier runs
 * with the same modules, and test/unit/deploy.files.test.ts checks that the files are what they render.
 */
import fs from "node:fs";
import path from "node:path";
import { DEPLOYED_GENERATED } from "../shared/ops/deployed-files";

const root = path.resolve(__dirname, "..");
for (const [file, text] of Object.entries(DEPLOYED_GENERATED())) {
  fs.writeFileSync(path.join(root, file), text, { mode: file.endsWith(".sh") ? 0o755 : 0o644 });
}
