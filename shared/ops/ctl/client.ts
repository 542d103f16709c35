/**
 * The CLI's end of the admin socket (./server.ts): sends one request, waits a bounded time for its one
 * answer, and gives back the result, or the server's error as a RemoteError.
 */
import net from "node:net";
import type { CommandRequest } from "./commands";
import { ANSWER_WAIT_MS, MAX_ANSWER_BYTES, RemoteError, readLine, type Answer } from "./protocol";

export async function sendCommand(
  file: string,
  request: CommandRequest,
  waitMs = ANSWER_WAIT_MS,
  maxBytes = MAX_ANSWER_BYTES,
): Promise<unknown> {
  const socket = net.connect(file);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve).once("error", reject);
    });
    socket.write(`${JSON.stringify(request)}\n`);
    const line = await readLine(socket, maxBytes, waitMs).catch((err: Error) => {
      throw new Error(`No answer from the server on ${file}: ${err.message}`);
    });
    let answer: Answer;
    try {
      answer = JSON.parse(line) as Answer;
    } catch {
      throw new Error(`The server on ${file} answered something else than JSON`);
    }
    if (answer.ok) return answer.result;
    throw new RemoteError(answer.error ?? { message: "the server answered an error without a message" });
  } finally {
    socket.destroy();
  }
}
