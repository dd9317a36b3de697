/**
 * A progress line for meshctl commands that can be slow (reading a cluster, asking the control
 * plane): shown on stderr only when it is a terminal and only once the work has taken longer than
 * a second, then erased, so fast runs, pipes and scripts see exactly the output they saw before.
 */
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';

export interface ProgressStream {
  write(s: string): unknown;
  readonly isTTY?: boolean;
}

export interface ProgressOptions {
  /** How long the work may run before the line appears (default 1000 ms). */
  readonly delayMs?: number;
  /** How often the line is redrawn once shown (default 100 ms). */
  readonly intervalMs?: number;
  /** Tests drive a fake clock; commands use the real one. */
  readonly clock?: Clock;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Carriage return + erase to the end of the line: the line is redrawn in place and left blank. */
const CLEAR = '\r\x1b[K';

/** Runs `work`, showing `⠋ label (1.2s)` on a terminal while it takes more than `delayMs`. */
export async function withProgress<T>(
  stream: ProgressStream,
  label: string,
  work: () => Promise<T>,
  opts: ProgressOptions = {},
): Promise<T> {
  if (stream.isTTY !== true) return work();
  const clock = opts.clock ?? realClock;
  const started = clock.now();
  let frame = 0;
  let shown = false;
  const draw = (): void => {
    const secs = ((clock.now() - started) / 1000).toFixed(1);
    stream.write(`${CLEAR}${FRAMES[frame++ % FRAMES.length] ?? ''} ${label} (${secs}s)`);
    shown = true;
    timer = clock.setTimeout(draw, opts.intervalMs ?? 100);
  };
  let timer: TimerHandle = clock.setTimeout(draw, opts.delayMs ?? 1000);
  try {
    return await work();
  } finally {
    clock.clearTimeout(timer);
    if (shown) stream.write(CLEAR);
  }
}
