/**
 * Zipf-like draws over n items: item k (0-based) with weight 1 / (k + 1)^s. With s = 1 over 10,000
 * rounds, the first one takes about 10% of the draws and the first hundred about half: a few hot, a
 * long tail. The order is the caller's (the rounds are created in random-id order anyway).
 */
export function zipf(n: number, s = 1, random: () => number = Math.random): () => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    total += 1 / Math.pow(k + 1, s);
    cumulative[k] = total;
  }
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
