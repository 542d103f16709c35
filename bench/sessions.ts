/**
 * Case 8's callers as mobile clients are: a client signs in once, then makes its requests with that one
 * access token (and the tokens its refreshes return) until the session ends; the next session is
 * another user's. A fixed number of sessions are open at once; each request goes to one of them, drawn
 * uniformly, so a session's requests interleave with the others' as concurrent users' do.
 *
 * Session length, in requests: geometric with a mean of SESSION_MEAN_REQUESTS. Why geometric: it has
 * one parameter, its mean; every request ends the session with the same chance (1 / mean), so short
 * sessions (one or two calls, an app opened and closed) are the most common and long ones still occur,
 * with no upper bound to choose. Why a mean of 20: an assumption, not a measurement: opening the app,
 * reading a few rounds and lists and perhaps joining or refreshing is some tens of API calls. With it,
 * about one request in 20 is a session's first, whose token the gateway has not verified yet.
 */

export const SESSION_MEAN_REQUESTS = 20;

/** Draws session lengths (requests, 1 or more) from the geometric distribution of mean `mean` (≥ 1). */
export function sessionLength(
  mean: number = SESSION_MEAN_REQUESTS,
  random: () => number = Math.random,
): () => number {
  if (!(mean >= 1)) throw new Error(`a session's mean length must be at least 1 request, not ${mean}`);
  const end = 1 / mean;
  if (end === 1) return () => 1;
  // Inversion: the number of trials up to the first "end", each with chance `end`.
  const scale = 1 / Math.log(1 - end);
  return () => Math.max(1, Math.ceil(Math.log(1 - random()) * scale));
}

/** The open sessions: which user each request is sent as. */
export class Sessions {
  private readonly users: Int32Array;
  private readonly left: Int32Array;
  /** Sessions begun so far (each a user's first request with its token in this run). */
  started = 0;

  constructor(
    open: number,
    private readonly pickUser: () => number,
    private readonly length: () => number = sessionLength(),
    private readonly random: () => number = Math.random,
  ) {
    this.users = new Int32Array(open);
    this.left = new Int32Array(open);
  }

  /** The user of the next request: of a session drawn among the open ones, begun anew if it had ended. */
  next(): number {
    const s = Math.floor(this.random() * this.users.length);
    if (this.left[s] <= 0) {
      this.users[s] = this.pickUser();
      this.left[s] = this.length();
      this.started++;
    }
    this.left[s]--;
    return this.users[s];
  }
}
