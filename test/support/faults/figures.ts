import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** What one fault scenario reports: one row of `npm run soak`'s table. */
export interface FaultFigures {
  readonly cases: number;
  readonly seconds: number;
  /** Worst single case (ms). */
  readonly maxMs: number;
  readonly rssGrowthMiB: number;
  readonly notes: string;
  /** Why the scenario's property does not hold (the table prints FAILED and the run exits 1). */
  readonly failure?: string;
}

export const MiB = 1024 * 1024;

export const round1 = (x: number): string => x.toFixed(1);

export const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Collects property violations; the first few end up in `failure`. */
export class Violations {
  readonly #list: string[] = [];
  check(ok: boolean, what: string): void {
    if (!ok) this.#list.push(what);
  }
  get failure(): { failure: string } | Record<string, never> {
    return this.#list.length > 0 ? { failure: this.#list.slice(0, 3).join('; ') } : {};
  }
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** heapUsed after two full GCs (bytes). */
export function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
