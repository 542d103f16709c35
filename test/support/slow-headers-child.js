/* global setInterval, clearInterval, setTimeout */
// Run as its own process by test/support/slow-clients.ts: opens COUNT connections to HOST:PORT over
// RAMP_MS, each sending a request's headers one byte every EVERY_MS (the first once connected), and
// prints one JSON line with what each was answered and when its connection closed, in milliseconds
// since its first byte (when Node starts the request's header time). A
// process of its own, so the clients' thousands of timers do not share the server's event loop.
const net = require("node:net");

const [host, port, count, everyMs, rampMs] = process.argv.slice(2);
const text = `GET /app-settings HTTP/1.1\r\nHost: ${host}:${port}\r\nX-Slow: ${"z".repeat(1000)}\r\n\r\n`;

function one() {
  return new Promise((resolve) => {
    let firstByteAt = 0;
    let raw = "";
    let at = 0;
    const socket = net.connect(Number(port), host);
    socket.setEncoding("latin1");
    const send = () => {
      if (at < text.length && !socket.destroyed) socket.write(text[at++]);
    };
    let timer;
    socket.on("connect", () => {
      firstByteAt = Date.now();
      send();
      timer = setInterval(send, Number(everyMs));
    });
    socket.on("data", (d) => (raw += d));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      resolve({
        ms: firstByteAt ? Date.now() - firstByteAt : -1,
        status: Number(raw.split(" ")[1]) || 0,
        body: raw.split("\r\n\r\n")[1] ?? "",
      });
    });
  });
}

(async () => {
  const all = [];
  const perBatch = 100;
  for (let i = 0; i < Number(count); i += perBatch) {
    for (let j = i; j < Math.min(i + perBatch, Number(count)); j++) all.push(one());
    await new Promise((r) => setTimeout(r, Number(rampMs) / (Number(count) / perBatch)));
  }
  process.stdout.write(`${JSON.stringify(await Promise.all(all))}\n`);
})();
