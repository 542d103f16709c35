/* global WebSocket, fetch, setTimeout, clearTimeout */
// Run as its own process by test/support/heap-after-gc.ts, with Node's WebSocket client (global from
// Node 22 on, behind --experimental-websocket on Node 20): asks the Node process whose inspector listens
// on 127.0.0.1:PORT for a full garbage collection (`HeapProfiler.collectGarbage`, Chrome DevTools
// protocol), then for `process.memoryUsage().heapUsed`, and prints that number. Exits 1 on any failure.
const [port] = process.argv.slice(2);

async function main() {
  const [target] = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve);
    ws.addEventListener("error", reject);
  });
  let next = 0;
  const send = (method, params = {}) =>
    new Promise((resolve) => {
      const id = ++next;
      const onMessage = (event) => {
        const message = JSON.parse(String(event.data));
        if (message.id !== id) return;
        ws.removeEventListener("message", onMessage);
        resolve(message);
      };
      ws.addEventListener("message", onMessage);
      ws.send(JSON.stringify({ id, method, params }));
    });
  await send("HeapProfiler.collectGarbage");
  const answer = await send("Runtime.evaluate", {
    expression: "process.memoryUsage().heapUsed",
    returnByValue: true,
  });
  ws.close();
  const value = Number(answer.result?.result?.value);
  if (!Number.isFinite(value)) throw new Error(`no heap size in ${JSON.stringify(answer)}`);
  process.stdout.write(String(value));
}

const timer = setTimeout(() => {
  process.stderr.write("no answer from the inspector within 60 s\n");
  process.exit(1);
}, 60_000);
main().then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
