/**
 * How many cases a fuzz property runs: the CI default, or FUZZ_RUNS for a long run (scaled for
 * the expensive properties). FUZZ_SEED replays a reported failure.
 */
import type fc from 'fast-check';

export interface FuzzRunOptions {
  /** Cases in a normal `npm test` run. */
  readonly ci: number;
  /** This property's share of FUZZ_RUNS (default 1: all of them); expensive properties run fewer. */
  readonly share?: number;
}

/** fast-check parameters for one property; read once, when the test runs (never at import). */
export function fuzzParams(o: FuzzRunOptions, env: NodeJS.ProcessEnv = process.env): fc.Parameters<unknown> {
  const requested = Number(env.FUZZ_RUNS ?? '');
  const numRuns = Number.isFinite(requested) && requested > 0 ? Math.max(1, Math.round(requested * (o.share ?? 1))) : o.ci;
  const seed = Number(env.FUZZ_SEED ?? '');
  return { numRuns, includeErrorInReport: true, ...(env.FUZZ_SEED !== undefined && Number.isInteger(seed) ? { seed } : {}) };
}

/** Running maxima and counts a fuzz run reports (cases/second, worst time per case, RSS growth). */
export class FuzzFigures {
  readonly #startedAt = performance.now();
  readonly #rssAtStart = process.memoryUsage().rss;
  #cases = 0;
  #maxMs = 0;
  #maxWhat = '';
  #maxRss = this.#rssAtStart;

  /** Times one case; the slowest is kept with its label. */
  time<T>(what: () => string, fn: () => T): T {
    const t0 = performance.now();
    try {
      return fn();
    } finally {
      this.record(performance.now() - t0, what);
    }
  }

  record(ms: number, what: () => string): void {
    this.#cases++;
    if (ms > this.#maxMs) {
      this.#maxMs = ms;
      this.#maxWhat = what();
    }
    if (this.#cases % 16 === 0) this.#maxRss = Math.max(this.#maxRss, process.memoryUsage().rss);
  }

  get maxMs(): number {
    return this.#maxMs;
  }

  /** One line for the test output (and the soak table). */
  summary(label: string): string {
    this.#maxRss = Math.max(this.#maxRss, process.memoryUsage().rss);
    const secs = (performance.now() - this.#startedAt) / 1000;
    const mib = (b: number): string => (b / 1024 / 1024).toFixed(1);
    return `${label}: ${this.#cases} cases in ${secs.toFixed(1)} s (${(this.#cases / secs).toFixed(0)}/s), slowest ${this.#maxMs.toFixed(1)} ms (${this.#maxWhat.slice(0, 160)}), max RSS growth ${mib(this.#maxRss - this.#rssAtStart)} MiB`;
  }

  figures(): { cases: number; seconds: number; maxMs: number; worst: string; rssGrowthMiB: number } {
    const seconds = (performance.now() - this.#startedAt) / 1000;
    return {
      cases: this.#cases,
      seconds,
      maxMs: this.#maxMs,
      worst: this.#maxWhat,
      rssGrowthMiB: (Math.max(this.#maxRss, process.memoryUsage().rss) - this.#rssAtStart) / 1024 / 1024,
    };
  }
}
