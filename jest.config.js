// Tiers: unit (no broker), storage (the contract suite, every reachable engine), e2e (HTTP against the
// gateway, one process), integration (brokers over a private NATS the harness starts). `npm test` runs them all; the summary reporter prints the closing "N passed, N failed".
//
// ts-jest only transpiles (isolatedModules in tsconfig; types are checked once by `npm run typecheck`). Pure JavaScript tooling on
// purpose: native transpilers ship per-platform packages that the registry here does not all carry, and
// `npm ci` then refuses the lock file.
const transform = { "^.+\\.ts$": ["ts-jest", { diagnostics: false }] };
const common = { testEnvironment: "node", transform, moduleFileExtensions: ["ts", "js", "json"] };

module.exports = {
  testTimeout: 30000,
  reporters: ["default", "<rootDir>/test/summary-reporter.js"],
  projects: [
    { ...common, displayName: "unit", testMatch: ["<rootDir>/test/unit/**/*.test.ts"] },
    { ...common, displayName: "storage", testMatch: ["<rootDir>/test/storage/**/*.test.ts"] },
    { ...common, displayName: "e2e", testMatch: ["<rootDir>/test/e2e/**/*.test.ts"] },
    { ...common, displayName: "integration", testMatch: ["<rootDir>/test/integration/**/*.test.ts"] },
  ],
};
