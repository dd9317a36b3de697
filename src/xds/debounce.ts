/**
 * istiod's debounce (pilot/pkg/xds/discovery.go): merge PushRequests until the stream of events
 * has been quiet for `debounceAfter`, or `debounceMax` has passed since the first event of the
 * batch, then push; at most one push in flight, events during it form the next batch.
 */
import { mergePushRequests, type PushRequest } from '../model/index.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/log.js';

export interface DebounceOptions {
  /** PILOT_DEBOUNCE_AFTER: quiet time before a push (ms). */
  readonly debounceAfter?: number;
  /** PILOT_DEBOUNCE_MAX: longest a batch waits under a continuous stream of events (ms). */
  readonly debounceMax?: number;
  /** PILOT_ENABLE_EDS_DEBOUNCE: when false, EDS-only (non-full) requests push at once. */
  readonly enableEDSDebounce?: boolean;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

export const DEFAULT_DEBOUNCE_AFTER_MS = 100;
export const DEFAULT_DEBOUNCE_MAX_MS = 10_000;

/**
 * Receives the merged request, how long it was debounced (first event → push, for
 * pilot_debounce_time) and how many events were merged into it. A returned Promise keeps the
 * push "in flight" until it settles.
 */
export type DebouncedPush = (req: PushRequest, debouncedMs: number, events: number) => void | Promise<void>;

export interface Debouncer {
  /**
   * Adds an event; never blocks and never runs the push on the caller's stack. `happenedAt`: when
   * the event happened, if before now (a file source settles a burst of writes before reading it):
   * the time since counts towards the quiet period.
   */
  enqueue(req: PushRequest, happenedAt?: number): void;
  /** Cancels timers and drops the pending batch; later events are ignored. */
  stop(): void;
  /** Events waiting for the next push (0 when nothing is pending). */
  pendingEvents(): number;
  /** True while a debounced push's Promise is pending. */
  inFlight(): boolean;
}

export function startDebounce(push: DebouncedPush, opts: DebounceOptions = {}): Debouncer {
  const after = opts.debounceAfter ?? DEFAULT_DEBOUNCE_AFTER_MS;
  const max = opts.debounceMax ?? DEFAULT_DEBOUNCE_MAX_MS;
  const edsDebounce = opts.enableEDSDebounce ?? true;
  const clock = opts.clock ?? realClock;
  const log = opts.logger ?? silentLogger;

  let pending: PushRequest | undefined;
  let events = 0;
  let firstEventAt = 0;
  let lastEventAt = 0;
  let timer: TimerHandle | undefined;
  let busy = false;
  let stopped = false;

  const run = async (req: PushRequest, debouncedMs: number, n: number): Promise<void> => {
    try {
      await push(req, debouncedMs, n);
    } catch (err) {
      log.error('push failed', { error: errorMessage(err), full: req.full, events: n });
    }
  };

  const onTimer = (): void => {
    timer = undefined;
    // While a push is in flight the settle handler re-checks; a timer firing then is moot.
    if (!busy && !stopped) check();
  };

  const check = (): void => {
    if (pending === undefined) return;
    const now = clock.now();
    const sinceFirst = now - firstEventAt;
    const quiet = now - lastEventAt;
    if (sinceFirst >= max || quiet >= after) {
      const req = pending;
      const n = events;
      pending = undefined;
      events = 0;
      busy = true;
      void run(req, sinceFirst, n).then(() => {
        busy = false;
        if (!stopped) check();
      });
      return;
    }
    // Wake when the quiet period could have elapsed, but never past the max-wait cap.
    timer = clock.setTimeout(onTimer, Math.min(after - quiet, max - sinceFirst));
  };

  return {
    enqueue(req, happenedAt) {
      if (stopped) return;
      if (!edsDebounce && !req.full) {
        // istiod pushes these at once and outside the one-in-flight rule.
        void Promise.resolve().then(() => run(req, 0, 1));
        return;
      }
      const now = clock.now();
      const at = Math.min(now, happenedAt ?? now);
      lastEventAt = Math.max(lastEventAt, at);
      if (events === 0) firstEventAt = at;
      events++;
      pending = pending === undefined ? req : mergePushRequests(pending, req);
      // One timer per batch; it re-arms itself for the remaining quiet time when it fires early.
      if (!busy && timer === undefined) timer = clock.setTimeout(onTimer, Math.max(0, after - (now - lastEventAt)));
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      pending = undefined;
      events = 0;
    },
    pendingEvents: () => events,
    inFlight: () => busy,
  };
}
