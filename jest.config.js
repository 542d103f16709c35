// Tiers: unit (no broker), storage (the contract suite, every reachable engine), e2e (HTTP against the
// gateway, one process), integration (brokers over a private NATS the harness starts). `npm test` runs them all; the summary reporter prints the closing "N passed, N failed".
//
// ts-jest only transpiles (isolatedModules in tsconfig; types are checked once by `npm run typecheck`). Pure JavaScript tooling on
// purpose: native transpilers ship per-platform packages that the registry here does not all carry, and
// `npm ci` then refuses the lock file.
const fs = require("node:fs");
const path = require("node:path");

const transform = {
  "^.+\\.ts$": ["ts-jest", { diagnostics: false }],
  // OpenTelemetry's OTLP/HTTP transport imports `http` with import(), which Jest's vm lacks.
  "/node_modules/@opentelemetry/otlp-exporter-base/.+\\.js$":
    "<rootDir>/test/support/dynamic-import-transform.js",
};
const common = {
  testEnvironment: "node",
  transform,
  transformIgnorePatterns: ["/node_modules/(?!@opentelemetry/otlp-exporter-base/)"],
  moduleFileExtensions: ["ts", "js", "json"],
};

// The deploy tier (test/deploy/): the image, compose's services and deploy/k8s/ in real podman containers.
// Minutes long and root-only, so not in plain `npm test`: `npm run test:deploy` (test/deploy/run.sh) sets
// ROUNDS_DEPLOY_TIER and selects it.
const deploy = {
  ...common,
  displayName: "deploy",
  testMatch: ["<rootDir>/test/deploy/**/*.test.ts"],
  globalSetup: "<rootDir>/test/deploy/global-setup.ts",
  globalTeardown: "<rootDir>/test/deploy/global-teardown.ts",
};

// A suite about one process's own machinery says so in a line of its own, with why:
// `// Tier: one process only (why).` Every other e2e suite runs in the cluster tier too, so a new one
// cannot be left out of it (test/unit/jest.config.test.ts).
const ONE_PROCESS_ONLY = /^\/\/ Tier: one process only \(.+\)\.?$/m;
function clusterSuites() {
  const dir = path.join(__dirname, "test/e2e");
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith(".test.ts"))
    .filter((file) => !ONE_PROCESS_ONLY.test(fs.readFileSync(path.join(dir, file), "utf8")))
    .sort();
}

module.exports = {
  testTimeout: 30000,
  reporters: ["default", "<rootDir>/test/summary-reporter.js"],
  projects: [
    { ...common, displayName: "unit", testMatch: ["<rootDir>/test/unit/**/*.test.ts"] },
    { ...common, displayName: "storage", testMatch: ["<rootDir>/test/storage/**/*.test.ts"] },
    { ...common, displayName: "e2e", testMatch: ["<rootDir>/test/e2e/**/*.test.ts"] },
    { ...common, displayName: "integration", testMatch: ["<rootDir>/test/integration/**/*.test.ts"] },
    // The endpoint cases of the e2e tier again, through a cluster of OS processes over private NATS and
    // Redis (test/support/cluster.ts): every e2e suite but those about one process's own machinery.
    {
      ...common,
      displayName: "cluster",
      testMatch: clusterSuites().map((suite) => `<rootDir>/test/e2e/${suite}`),
      setupFiles: ["<rootDir>/test/support/cluster-topology.js"],
    },
    // What an attacker or auditor tries first (docs/security.md), against the running system in both
    // topologies.
    { ...common, displayName: "security", testMatch: ["<rootDir>/test/security/**/*.test.ts"] },
    {
      ...common,
      displayName: "security-cluster",
      testMatch: ["<rootDir>/test/security/**/*.test.ts"],
      setupFiles: ["<rootDir>/test/support/cluster-topology.js"],
    },
    // Hostile requests for every operation of the OpenAPI document (property-based, fast-check), with a
    // fixed seed and a bounded number of runs here; `npm run fuzz` runs longer with a random seed.
    { ...common, displayName: "fuzz", testMatch: ["<rootDir>/test/fuzz/**/*.test.ts"] },
    {
      ...common,
      displayName: "fuzz-cluster",
      testMatch: ["<rootDir>/test/fuzz/**/*.test.ts"],
      setupFiles: ["<rootDir>/test/support/cluster-topology.js"],
    },
    ...(process.env.ROUNDS_DEPLOY_TIER ? [deploy] : []),
  ],
};
