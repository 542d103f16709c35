/**
 * What a stand-in server (baseline-server.ts, floor-server.ts) answers: the answers recorded from the
 * system, in order, each `count` times, then the last one for every request after them. They arrive
 * over IPC from the bench (baseline.ts).
 */
import type { BaselineMessage } from "./baseline";

export interface Answer {
  status: number;
  headers: [string, string][];
  body: Buffer;
  count?: number;
}

export class RecordedPlan {
  private plan: Answer[] = [];
  private served = 0;

  /** Replaces the answers and starts their sequence again. */
  load(msg: BaselineMessage): void {
    this.plan = msg.responses.map((r) => ({ ...r, body: Buffer.from(r.body, "base64") }));
    this.served = 0;
  }

  next(): Answer {
    let n = this.served++;
    for (const a of this.plan) {
      if (a.count === undefined || n < a.count) return a;
      n -= a.count;
    }
    return this.plan[this.plan.length - 1];
  }
}
