/**
 * The heap a Node process still reaches: a full garbage collection through its inspector, then its
 * `heapUsed`. Read without a collection, a heap holds whatever garbage the collector has not yet got
 * round to, and swings by tens of megabytes. The process must run with `--inspect=127.0.0.1:<port>`.
 * The inspector client runs in a process of its own (heap-after-gc-child.js), where Node's WebSocket
 * client can be switched on whatever the Node (a flag before Node 22).
 */
import { execFile } from "node:child_process";
import path from "node:path";

const websocketFlag = Number(process.versions.node.split(".")[0]) < 22 ? ["--experimental-websocket"] : [];

export function heapAfterGc(inspectPort: number): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...websocketFlag, path.join(__dirname, "heap-after-gc-child.js"), String(inspectPort)],
      { timeout: 90_000 },
      (err, stdout, stderr) => {
        if (err)
          reject(new Error(`heap after GC on inspector port ${inspectPort}: ${stderr || err.message}`));
        else resolve(Number(stdout));
      },
    );
  });
}
