/**
 * The time-weighted average, standard deviation and maximum of a value
 * (a level's seat demand) since the last reset, as the original's
 * integrator measures it for borrowing.
 */
export interface IntegratorResults {
  durationMs: number;
  average: number;
  deviation: number;
  max: number;
}

export class Integrator {
  private value = 0;
  private since: number;
  private lastChange: number;
  private sum = 0;
  private sumSquares = 0;
  private max = 0;

  constructor(private readonly now: () => number) {
    this.since = now();
    this.lastChange = this.since;
  }

  set(value: number): void {
    this.accumulate();
    this.value = value;
    if (value > this.max) this.max = value;
  }

  /** The results since the last reset; a new period starts at the current value. */
  reset(): IntegratorResults {
    this.accumulate();
    const durationMs = this.lastChange - this.since;
    const average = durationMs > 0 ? this.sum / durationMs : this.value;
    const variance = durationMs > 0 ? this.sumSquares / durationMs - average * average : 0;
    const results = { durationMs, average, deviation: Math.sqrt(Math.max(0, variance)), max: this.max };
    this.since = this.lastChange;
    this.sum = 0;
    this.sumSquares = 0;
    this.max = this.value;
    return results;
  }

  private accumulate(): void {
    const t = this.now();
    const dt = t - this.lastChange;
    if (dt > 0) {
      this.sum += this.value * dt;
      this.sumSquares += this.value * this.value * dt;
    }
    this.lastChange = t;
  }
}
