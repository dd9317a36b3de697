import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../util/log.js';

/**
 * Start-up (some 650 modules, their protobuf descriptors, the first lists and push) keeps nearly
 * everything it allocates, so V8 grows the young generation to its maximum (two 16 MiB semi-spaces)
 * and keeps it committed for good: ~30 MiB of an idle control plane's RSS. V8 shrinks it only after a
 * full collection that finds the allocation rate of the last seconds low, which a quiet process never
 * starts by itself. So, once ready and quiet, run full collections until the young generation has
 * shrunk (or a few tries found the process busy). Under load V8 grows it again as it needs to.
 */

export interface YoungGenerationOptions {
  /**
   * Between tries: V8 judges the allocation rate since its previous collection, over ~5 s, so a
   * quick young-generation collection marks the start and the full one comes this long after.
   */
  readonly quietMs?: number;
  readonly tries?: number;
  readonly log?: Logger;
  /** The collector (tests pass their own); by default V8's, reached without --expose-gc. */
  readonly collect?: Collector;
}

const MiB = 1024 * 1024;

export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

/**
 * V8's `gc` (`{ type }` picks the collection) without --expose-gc for the whole process: the flag installs `gc` only in contexts
 * created while it is set, so a throwaway context gets it and the flag is cleared again.
 */
export type Collector = (options: { type: 'minor' | 'major' }) => void;

export function v8Collector(): Collector {
  const exposed = (globalThis as { gc?: Collector }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Collector;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** Schedules the collections; `cancel` stops any still pending (on shutdown). */
export function shrinkYoungGenerationWhenQuiet(opts: YoungGenerationOptions = {}): { cancel(): void; done: Promise<boolean> } {
  const quietMs = opts.quietMs ?? 5500;
  const tries = opts.tries ?? 4;
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const collect = opts.collect ?? v8Collector();
  let settle: (shrunk: boolean) => void = () => {};
  const done = new Promise<boolean>((resolve) => (settle = resolve));
  const attempt = (n: number): void => {
    if (cancelled) return;
    const before = youngGenerationBytes();
    collect({ type: 'major' });
    const after = youngGenerationBytes();
    const shrunk = after < before;
    if (shrunk || n >= tries) {
      opts.log?.debug('young generation after a quiet-time collection', {
        beforeMiB: Math.round(before / MiB),
        afterMiB: Math.round(after / MiB),
        tries: n,
      });
      settle(shrunk);
      return;
    }
    timer = setTimeout(() => attempt(n + 1), quietMs).unref();
  };
  collect({ type: 'minor' });
  timer = setTimeout(() => attempt(1), quietMs).unref();
  return {
    cancel() {
      cancelled = true;
      clearTimeout(timer);
      settle(false);
    },
    done,
  };
}
