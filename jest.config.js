// Three tiers: unit (no broker), storage (the contract suite, every reachable engine), e2e (HTTP against
// the gateway). `npm test` runs them all; the summary reporter prints the closing "N passed, N failed".
const transform = {
  "^.+\\.ts$": ["@swc/jest", { jsc: { parser: { syntax: "typescript" }, target: "es2022" } }],
};
const common = { testEnvironment: "node", transform, moduleFileExtensions: ["ts", "js", "json"] };

module.exports = {
  reporters: ["default", "<rootDir>/test/summary-reporter.js"],
  projects: [
    { ...common, displayName: "unit", testMatch: ["<rootDir>/test/unit/**/*.test.ts"] },
    { ...common, displayName: "storage", testMatch: ["<rootDir>/test/storage/**/*.test.ts"] },
    { ...common, displayName: "e2e", testMatch: ["<rootDir>/test/e2e/**/*.test.ts"], testTimeout: 30000 },
  ],
};
