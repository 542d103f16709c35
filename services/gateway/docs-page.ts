/**
 * The interactive API reference at /docs: Swagger UI from the installed swagger-ui-dist package (no
 * CDN: these machines, and many deployments, have no internet), pointed at /openapi.json.
 */
import path from "node:path";
/**
 * The package's folder, where its README says the assets are. Its documented `getAbsoluteFSPath()`
 * returns the same folder, but requiring the package runs Swagger UI's browser bundle in this process,
 * which then keeps it in the heap for nothing (docs/decisions/0060-node-24-production.md).
 */
const assetFolder = path.dirname(require.resolve("swagger-ui-dist/package.json"));

const assets = new Map<string, string>([
  ["swagger-ui.css", "text/css; charset=utf-8"],
  ["swagger-ui-bundle.js", "application/javascript; charset=utf-8"],
  ["swagger-ui-standalone-preset.js", "application/javascript; charset=utf-8"],
  ["favicon-32x32.png", "image/png"],
]);

export function docsAsset(name: string): { file: string; type: string } | null {
  const type = assets.get(name);
  return type ? { file: path.join(assetFolder, name), type } : null;
}

export const docsHtml = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Rounds API reference</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: "/openapi.json",
      dom_id: "#swagger-ui",
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "StandaloneLayout",
      persistAuthorization: true,
      tryItOutEnabled: true
    });
  </script>
</body>
</html>
`;
