/**
 * A progress line for meshctl commands that can be slow (reading a cluster, asking the control
 * plane): shown on stderr only when it is a terminal and only once the work has taken longer than
 * a second, then erased, so fast runs, pipes and scripts see exactly the output they saw before.
 */

export interface ProgressStream {
  write(s: string): unknown;
  readonly isTTY?: boolean;
}

/** Timer and clock seams (tests drive them; commands use the defaults). */
export interface ProgressClock {
  readonly now: () => number;
  readonly setTimeout: (fn: () => void, ms: number) => unknown;
  readonly clearTimeout: (t: unknown) => void;
  readonly setInterval: (fn: () => void, ms: number) => unknown;
  readonly clearInterval: (t: unknown) => void;
}

export interface ProgressOptions {
  /** How long the work may run before the line appears (default 1000 ms). */
  readonly delayMs?: number;
  /** How often the line is redrawn once shown (default 100 ms). */
  readonly intervalMs?: number;
  readonly clock?: ProgressClock;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Carriage return + erase to the end of the line: the line is redrawn in place and left blank. */
const CLEAR = '\r\x1b[K';

const SYSTEM_CLOCK: ProgressClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (t) => clearInterval(t as NodeJS.Timeout),
};

/** Runs `work`, showing `⠋ label (1.2s)` on a terminal while it takes more than `delayMs`. */
export async function withProgress<T>(stream: ProgressStream, label: string, work: () => Promise<T>, opts: ProgressOptions = {}): Promise<T> {
  if (stream.isTTY !== true) return work();
  const clock = opts.clock ?? SYSTEM_CLOCK;
  const started = clock.now();
  let frame = 0;
  let shown = false;
  let ticker: unknown;
  const draw = (): void => {
    const secs = ((clock.now() - started) / 1000).toFixed(1);
    stream.write(`${CLEAR}${FRAMES[frame++ % FRAMES.length] ?? ''} ${label} (${secs}s)`);
    shown = true;
  };
  const delay = clock.setTimeout(() => {
    draw();
    ticker = clock.setInterval(draw, opts.intervalMs ?? 100);
  }, opts.delayMs ?? 1000);
  try {
    return await work();
  } finally {
    clock.clearTimeout(delay);
    if (ticker !== undefined) clock.clearInterval(ticker);
    if (shown) stream.write(CLEAR);
  }
}
