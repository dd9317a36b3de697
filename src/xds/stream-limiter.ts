/**
 * Admission and lifecycle of gRPC streams at the server edge, around any grpc-js bidi handler:
 *
 * - new-stream rate limit (PILOT_MAX_REQUESTS_PER_SECOND): a token bucket with burst 1. Unlike
 *   istiod, which refuses a stream that would wait over 1 s with RESOURCE_EXHAUSTED (so most of a
 *   reconnect storm is refused and retries later, with backoff), a stream here waits its turn in a
 *   FIFO queue and is admitted when its token comes: every stream of a storm is served, in
 *   arrival order. Only when the queue already holds `maxWaiting` streams is a new one refused
 *   with RESOURCE_EXHAUSTED (bounded memory for waiting calls);
 * - work-conserving (`maxWarming`): the queue head is also admitted before its token while fewer
 *   than `maxWarming` admitted streams are still warming up — not yet sent their first response
 *   (at most WARM_UP_MAX_MS). A server that answers quickly then takes a storm as fast as it
 *   serves it (a restart's reconnecting proxies resync in a second, not proxies/rate seconds);
 *   a slow one still gets no more new streams than the rate and `maxWarming` in flight;
 * - a stream that goes away while waiting leaves the queue and uses no token;
 * - draining: once `drain()` is called new streams are refused with UNAVAILABLE, and `closeAll`
 *   ends the admitted ones with a status (not a connection reset), so clients reconnect elsewhere.
 *
 * The handler never sees a refused stream. Messages a client sends while its stream waits stay
 * buffered in the (paused) call and reach the handler once it attaches its listeners.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';

/** Streams that may wait for admission at once; more are refused (each holds a call and its buffered requests). */
export const DEFAULT_MAX_WAITING_STREAMS = 10_000;

/** Longest an admitted stream counts as warming up when it sends no response (a client that never asks). */
export const WARM_UP_MAX_MS = 1000;

/** A token bucket with burst 1 on a timeline. Pure: time comes from the caller. */
export interface TokenBucket {
  /** Takes the token if one is available at `now`. */
  take(now: number): boolean;
  /** Milliseconds from `now` until the next token (0 when one is available). */
  waitMs(now: number): number;
}

export function tokenBucket(ratePerSecond: number): TokenBucket {
  if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond)) throw new RangeError(`rate must be a positive number, got ${ratePerSecond}`);
  const interval = 1000 / ratePerSecond;
  /** Earliest time the next token is available (burst 1: never earlier than one interval after the last). */
  let nextFree = Number.NEGATIVE_INFINITY;
  return {
    take(now) {
      if (now < nextFree) return false;
      nextFree = now + interval;
      return true;
    },
    waitMs(now) {
      return Math.max(0, nextFree - now);
    },
  };
}

/** grpc-js's handler type for a bidi-streaming method. */
export type BidiHandler<Req, Res> = (call: grpc.ServerDuplexStream<Req, Res>) => void;

export interface StreamGateOptions {
  /** New streams per second (already resolved: > 0). */
  readonly maxRequestsPerSecond: number;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Default DEFAULT_MAX_WAITING_STREAMS. */
  readonly maxWaiting?: number;
  /** Admitted streams that may be warming up at once before tokens are needed (0: the rate alone). Default 0. */
  readonly maxWarming?: number;
}

export interface StreamGateStats {
  /** Streams handed to a handler. */
  readonly admitted: number;
  /** Streams refused with RESOURCE_EXHAUSTED because the admission queue was full. */
  readonly rateLimited: number;
  /** Streams refused with UNAVAILABLE while draining. */
  readonly refusedDraining: number;
  /** Streams that went away while waiting for a token. */
  readonly abandoned: number;
  /** Streams waiting for a token now. */
  readonly waiting: number;
  /** Admitted streams not yet ended. */
  readonly active: number;
  /** Streams that had to wait, and the longest wait (ms) of an admitted one. */
  readonly queued: number;
  readonly maxWaitedMs: number;
  /** Admitted before their token because few streams were warming up. */
  readonly admittedEarly: number;
}

export interface StreamGate {
  /** Wraps one bidi handler: admission first, then the handler. */
  wrap<Req, Res>(handler: BidiHandler<Req, Res>): BidiHandler<Req, Res>;
  /** Wraps every bidi method of a service implementation (others are passed through unchanged). */
  wrapService(definition: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation): grpc.UntypedServiceImplementation;
  /** From now on refuse new streams (UNAVAILABLE) and fail waiting ones. Idempotent. */
  drain(): void;
  /** Ends every admitted stream with `code`/`details`; returns how many were ended. */
  closeAll(code: grpc.status, details: string): number;
  /** Resolves once no admitted stream is left (or at once). */
  idle(): Promise<void>;
  stats(): StreamGateStats;
}

/** A status sent to a refused stream; the same shape grpc-js's own handlers emit. */
function statusError(code: grpc.status, details: string): Partial<grpc.StatusObject> & Error {
  return Object.assign(new Error(details), { code, details });
}

/** How often a summary of refused streams may be logged at warn. */
const WARN_EVERY_MS = 1000;

type AnyCall = grpc.ServerDuplexStream<unknown, unknown>;

/** A stream waiting for its token: admitted (or failed) once, then forgotten. */
interface Waiting {
  readonly since: number;
  readonly admit: () => void;
  readonly fail: () => void;
}

export function createStreamGate(opts: StreamGateOptions): StreamGate {
  const clock = opts.clock ?? realClock;
  const maxWaiting = opts.maxWaiting ?? DEFAULT_MAX_WAITING_STREAMS;
  const bucket = tokenBucket(opts.maxRequestsPerSecond);
  const log = opts.logger;
  const active = new Set<AnyCall>();
  /** FIFO: a Map keeps insertion order, and a stream that goes away leaves it in O(1). */
  const waiting = new Map<AnyCall, Waiting>();
  let timer: TimerHandle | undefined;
  const idleWaiters: (() => void)[] = [];
  let draining = false;
  const counts = { admitted: 0, rateLimited: 0, refusedDraining: 0, abandoned: 0, queued: 0, maxWaitedMs: 0, admittedEarly: 0 };
  const maxWarming = opts.maxWarming ?? 0;
  /** Admitted streams that have not sent their first response yet, with their warm-up timer. */
  const warming = new Map<AnyCall, TimerHandle>();
  let lastWarnAt = Number.NEGATIVE_INFINITY;
  let limitedSinceWarn = 0;

  const refuse = (call: AnyCall, code: grpc.status, details: string): void => {
    call.emit('error', statusError(code, details));
  };

  const onQueueFull = (call: AnyCall): void => {
    counts.rateLimited++;
    limitedSinceWarn++;
    log.debug('new stream refused: admission queue full', {
      peer: call.getPeer(),
      path: call.getPath(),
      limit: opts.maxRequestsPerSecond,
      waiting: waiting.size,
    });
    const now = clock.now();
    if (now - lastWarnAt >= WARN_EVERY_MS) {
      log.warn('new xDS streams refused: admission queue full (PILOT_MAX_REQUESTS_PER_SECOND)', {
        refused: limitedSinceWarn,
        totalRefused: counts.rateLimited,
        limit: opts.maxRequestsPerSecond,
        waiting: waiting.size,
      });
      lastWarnAt = now;
      limitedSinceWarn = 0;
    }
    refuse(
      call,
      grpc.status.RESOURCE_EXHAUSTED,
      `request rate limit exceeded: ${opts.maxRequestsPerSecond} new streams per second and ${waiting.size} streams already waiting`,
    );
  };

  const forget = (call: AnyCall): void => {
    if (!active.delete(call)) return;
    if (active.size === 0) for (const w of idleWaiters.splice(0)) w();
  };

  const warmed = (c: AnyCall): void => {
    const t = warming.get(c);
    if (t === undefined) return;
    clock.clearTimeout(t);
    warming.delete(c);
    pump();
  };

  /** Counts `call` as warming up until its first write (a response), its end, or WARM_UP_MAX_MS. */
  const watchWarmUp = (call: AnyCall): void => {
    if (maxWarming <= 0) return;
    warming.set(
      call,
      clock.setTimeout(() => warmed(call), WARM_UP_MAX_MS),
    );
    const write = call.write;
    call.write = function (this: AnyCall, ...args: Parameters<AnyCall['write']>): boolean {
      call.write = write;
      warmed(call);
      return write.apply(this, args);
    } as AnyCall['write'];
  };

  const admit = <Req, Res>(call: grpc.ServerDuplexStream<Req, Res>, handler: BidiHandler<Req, Res>): void => {
    const c = call as AnyCall;
    counts.admitted++;
    active.add(c);
    const done = (): void => {
      forget(c);
      warmed(c);
    };
    call.once('cancelled', done);
    call.once('close', done);
    call.once('finish', done);
    watchWarmUp(c);
    handler(call);
  };

  const admitHead = (now: number): boolean => {
    const head = waiting.entries().next();
    if (head.done) return false;
    const [call, w] = head.value;
    waiting.delete(call);
    counts.maxWaitedMs = Math.max(counts.maxWaitedMs, now - w.since);
    w.admit();
    return true;
  };

  /** Admits queued streams while few are warming up (work-conserving), before their tokens. */
  const pump = (): void => {
    while (!draining && waiting.size > 0 && warming.size < maxWarming) {
      counts.admittedEarly++;
      admitHead(clock.now());
    }
  };

  /** Admits the head of the queue whenever its token is due; one timer for the whole queue. */
  const schedule = (): void => {
    if (timer !== undefined || waiting.size === 0) return;
    timer = clock.setTimeout(() => {
      timer = undefined;
      const now = clock.now();
      if (waiting.size > 0 && bucket.take(now)) admitHead(now);
      schedule();
    }, bucket.waitMs(clock.now()));
  };

  const gate: StreamGate = {
    wrap<Req, Res>(handler: BidiHandler<Req, Res>): BidiHandler<Req, Res> {
      return (call) => {
        const c = call as AnyCall;
        if (draining) {
          counts.refusedDraining++;
          refuse(c, grpc.status.UNAVAILABLE, 'server is shutting down');
          return;
        }
        // Nobody ahead: take the token now if there is one (no timer, no reordering).
        if (waiting.size === 0 && bucket.take(clock.now())) {
          admit(call, handler);
          return;
        }
        if (waiting.size >= maxWaiting) {
          onQueueFull(c);
          return;
        }
        const onGone = (): void => {
          if (!waiting.delete(c)) return;
          counts.abandoned++;
        };
        call.once('cancelled', onGone);
        counts.queued++;
        waiting.set(c, {
          since: clock.now(),
          admit: () => {
            call.off('cancelled', onGone);
            admit(call, handler);
          },
          fail: () => {
            call.off('cancelled', onGone);
            counts.refusedDraining++;
            refuse(c, grpc.status.UNAVAILABLE, 'server is shutting down');
          },
        });
        pump();
        schedule();
      };
    },
    wrapService(definition, impl) {
      const out: grpc.UntypedServiceImplementation = {};
      for (const [name, fn] of Object.entries(impl)) {
        const def = definition[name];
        out[name] =
          def?.requestStream && def.responseStream ? (gate.wrap(fn as BidiHandler<unknown, unknown>) as grpc.UntypedHandleCall) : fn;
      }
      return out;
    },
    drain() {
      if (draining) return;
      draining = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      const failing = [...waiting.values()];
      waiting.clear();
      for (const w of failing) w.fail();
    },
    closeAll(code, details) {
      const calls = [...active];
      for (const c of calls) {
        forget(c);
        try {
          c.emit('error', statusError(code, details));
        } catch (err) {
          log.debug('ending a stream failed', { peer: c.getPeer(), error: String(err) });
        }
      }
      return calls.length;
    },
    idle() {
      return active.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    stats() {
      return { ...counts, waiting: waiting.size, active: active.size };
    },
  };
  return gate;
}
