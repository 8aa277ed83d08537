/**
 * Borrowing between priority levels, as the original adjusts it every ten
 * seconds: each level's seat demand over the period (its average plus one
 * standard deviation, smoothed so it decays slowly, and its high
 * watermark) sets a target; the levels' current limits are the targets
 * scaled by one fair fraction so they add up to the server's seats, each
 * kept between its nominal limit less what it lends (lendablePercent) and
 * its nominal limit plus what it may borrow (borrowingLimitPercent). The
 * exempt level keeps what it used.
 */

export const BORROWING_PERIOD_MS = 10_000;
/** How much of last period's smoothed demand is kept each period. */
const SMOOTHING = 0.977;

export interface LevelDemand {
  name: string;
  exempt: boolean;
  nominal: number;
  /** Nominal less the lendable seats. */
  minLimit: number;
  /** Nominal plus the seats it may borrow (Infinity: no limit). */
  maxLimit: number;
  /** Smoothed demand envelope (seats). */
  smoothed: number;
  /** Most seats demanded at once in the period. */
  highWatermark: number;
}

/** The next smoothed demand from a period's average and deviation. */
export function smoothDemand(previous: number, average: number, deviation: number): number {
  const envelope = average + deviation;
  return Math.max(envelope, SMOOTHING * previous + (1 - SMOOTHING) * envelope);
}

interface Item {
  lower: number;
  upper: number;
  target: number;
}

/** Allocations clamp(target × f, lower, upper) adding up to `total`, for the one fair fraction f that makes them do so. */
export function fairAllocation(total: number, items: readonly Item[]): number[] {
  const at = (f: number): number[] => items.map((i) => Math.min(i.upper, Math.max(i.lower, i.target * f)));
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  if (sum(items.map((i) => i.lower)) >= total) return items.map((i) => i.lower);
  if (sum(items.map((i) => i.upper)) <= total) return items.map((i) => i.upper);
  let lo = 0;
  let hi = 1;
  while (sum(at(hi)) < total && hi < 1e12) hi *= 2;
  for (let k = 0; k < 60; k++) {
    const mid = (lo + hi) / 2;
    if (sum(at(mid)) < total) lo = mid;
    else hi = mid;
  }
  return at(hi);
}

/** Each level's current limit for the next period. */
export function allocateLimits(levels: readonly LevelDemand[]): Map<string, number> {
  const nominalSum = levels.reduce((a, l) => a + l.nominal, 0);
  let remaining = nominalSum;
  const out = new Map<string, number>();
  const limited: Array<LevelDemand & { minCurrent: number }> = [];
  let minSum = 0;
  let minCurrentSum = 0;
  for (const l of levels) {
    if (l.exempt) {
      const used = Math.max(l.minLimit, l.highWatermark);
      out.set(l.name, used);
      remaining -= used;
      continue;
    }
    const minCurrent = Math.max(l.minLimit, Math.min(l.nominal, l.highWatermark));
    limited.push({ ...l, minCurrent });
    minSum += l.minLimit;
    minCurrentSum += minCurrent;
  }
  if (remaining <= minSum) {
    for (const l of limited) out.set(l.name, l.minLimit);
  } else if (remaining <= minCurrentSum) {
    const share = (remaining - minSum) / (minCurrentSum - minSum);
    for (const l of limited) out.set(l.name, l.minLimit + Math.round((l.minCurrent - l.minLimit) * share));
  } else {
    const allocs = fairAllocation(
      nominalSum,
      limited.map((l) => ({ lower: l.minCurrent, upper: l.maxLimit, target: Math.max(l.minCurrent, l.smoothed) })),
    );
    limited.forEach((l, i) => out.set(l.name, Math.round(allocs[i] as number)));
  }
  return out;
}
