// Jest runs CommonJS in a vm that has no dynamic import() (short of --experimental-vm-modules), and
// OpenTelemetry's OTLP/HTTP transport loads `http` and `https` with import() when it first sends. In
// tests only, this turns `import('http')` and `import('https')` of that package into a resolved
// require(), so the real exporter runs in-process (e2e embedded, unit); processes started outside Jest
// load it as Node does.
const BUILTIN_IMPORT = /\bimport\((['"])(https?)\1\)/g;

module.exports = {
  process(source) {
    return {
      code: source.replace(BUILTIN_IMPORT, (_m, q, name) => `Promise.resolve(require(${q}${name}${q}))`),
    };
  },
};
