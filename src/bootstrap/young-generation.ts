import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../util/log.js';

/**
 * Start-up (some 650 modules, their protobuf descriptors, the first lists and push) keeps nearly
 * everything it allocates, so V8 grows the young generation to its maximum (two 16 MiB semi-spaces)
 * and keeps it committed for good: ~30 MiB of an idle control plane's RSS. V8 shrinks it at the end
 * of a collection that finds the allocation rate of the last ~5 s low, but a quiet process runs no
 * collections. So, once ready, a young-generation collection (about a millisecond: little is young
 * by then) every second until one has shrunk it, or the tries run out on a busy process. Under load
 * V8 grows it again as it needs to.
 */

export interface YoungGenerationOptions {
  /** Between tries (V8 judges the allocation rate over the collections of the last ~5 s). */
  readonly intervalMs?: number;
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
  const intervalMs = opts.intervalMs ?? 1000;
  const tries = opts.tries ?? 120;
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const collect = opts.collect ?? v8Collector();
  let settle: (shrunk: boolean) => void = () => {};
  const done = new Promise<boolean>((resolve) => (settle = resolve));
  const attempt = (n: number): void => {
    if (cancelled) return;
    const before = youngGenerationBytes();
    collect({ type: 'minor' });
    const after = youngGenerationBytes();
    const shrunk = after < before;
    if (shrunk || n >= tries) {
      opts.log?.debug('young generation after the quiet-time collections', {
        beforeMiB: Math.round(before / MiB),
        afterMiB: Math.round(after / MiB),
        tries: n,
      });
      settle(shrunk);
      return;
    }
    timer = setTimeout(() => attempt(n + 1), intervalMs).unref();
  };
  timer = setTimeout(() => attempt(1), intervalMs).unref();
  return {
    cancel() {
      cancelled = true;
      clearTimeout(timer);
      settle(false);
    },
    done,
  };
}
