/**
 * A probe whose answer is shared: at most one probe runs at a time, and its answer serves every
 * caller for `maxAgeMs`. The public `/readyz` answers from one, so a flood of probes costs Temporal
 * at most one call per `maxAgeMs`, whatever the rate.
 */
export class SharedProbe<T> {
  private last?: { at: number; value: T };
  private running?: Promise<T>;

  constructor(
    private readonly probe: () => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The last answer if it is fresh enough, else the running probe's, else a new probe's. */
  get(): Promise<T> {
    if (this.last && this.now() - this.last.at < this.maxAgeMs) return Promise.resolve(this.last.value);
    this.running ??= this.probe().then(
      (value) => {
        this.last = { at: this.now(), value };
        this.running = undefined;
        return value;
      },
      (err: unknown) => {
        this.running = undefined;
        throw err;
      },
    );
    return this.running;
  }
}
