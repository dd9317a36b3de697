/**
 * Admission and lifecycle of gRPC streams at the server edge, around any grpc-js bidi handler:
 *
 * - new-stream rate limit as istiod (PILOT_MAX_REQUESTS_PER_SECOND): a token bucket with burst 1;
 *   a new stream waits for its token up to 1 s; one that would have to wait longer is refused at
 *   once with RESOURCE_EXHAUSTED (as golang.org/x/time/rate's Wait with a 1 s deadline does);
 * - draining: once `drain()` is called new streams are refused with UNAVAILABLE, and `closeAll`
 *   ends the admitted ones with a status (not a connection reset), so clients reconnect elsewhere.
 *
 * The handler never sees a refused stream. Messages a client sends while its stream waits for a
 * token stay buffered in the (paused) call and reach the handler once it attaches its listeners.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import { realClock, type Clock, type TimerHandle } from './debounce.js';

/** How long a new stream may wait for a token before it is refused (istiod: 1 s). */
export const MAX_ADMISSION_WAIT_MS = 1000;

/**
 * A token bucket with burst 1, as reservations on a timeline (GCRA): each admitted stream takes
 * the next free slot; slots are 1/rate apart. Pure: time comes from the caller.
 */
export interface TokenBucket {
  /**
   * Reserves a token at `now`: the delay (ms) until it is valid, or undefined (and nothing
   * reserved) when that delay would exceed `maxWaitMs`.
   */
  reserve(now: number, maxWaitMs: number): Reservation | undefined;
}

export interface Reservation {
  readonly delayMs: number;
  /** Gives the slot back (the stream went away while waiting), if no later slot depends on it. */
  cancel(): void;
}

export function tokenBucket(ratePerSecond: number): TokenBucket {
  if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond)) throw new RangeError(`rate must be a positive number, got ${ratePerSecond}`);
  const interval = 1000 / ratePerSecond;
  /** Earliest time the next token is available (burst 1: never earlier than one interval after the last). */
  let nextFree = Number.NEGATIVE_INFINITY;
  return {
    reserve(now, maxWaitMs) {
      const at = Math.max(now, nextFree);
      const delayMs = at - now;
      if (delayMs > maxWaitMs) return undefined;
      const after = at + interval;
      nextFree = after;
      return {
        delayMs,
        cancel() {
          if (nextFree === after) nextFree = at;
        },
      };
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
  /** Default MAX_ADMISSION_WAIT_MS. */
  readonly maxWaitMs?: number;
}

export interface StreamGateStats {
  /** Streams handed to a handler. */
  readonly admitted: number;
  /** Streams refused with RESOURCE_EXHAUSTED by the rate limit. */
  readonly rateLimited: number;
  /** Streams refused with UNAVAILABLE while draining. */
  readonly refusedDraining: number;
  /** Streams that went away while waiting for a token. */
  readonly abandoned: number;
  /** Streams waiting for a token now. */
  readonly waiting: number;
  /** Admitted streams not yet ended. */
  readonly active: number;
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

export function createStreamGate(opts: StreamGateOptions): StreamGate {
  const clock = opts.clock ?? realClock;
  const maxWaitMs = opts.maxWaitMs ?? MAX_ADMISSION_WAIT_MS;
  const bucket = tokenBucket(opts.maxRequestsPerSecond);
  const log = opts.logger;
  const active = new Set<grpc.ServerDuplexStream<unknown, unknown>>();
  const waiting = new Map<grpc.ServerDuplexStream<unknown, unknown>, () => void>();
  const idleWaiters: (() => void)[] = [];
  let draining = false;
  const counts = { admitted: 0, rateLimited: 0, refusedDraining: 0, abandoned: 0 };
  let lastWarnAt = Number.NEGATIVE_INFINITY;
  let limitedSinceWarn = 0;

  const refuse = (call: grpc.ServerDuplexStream<unknown, unknown>, code: grpc.status, details: string): void => {
    call.emit('error', statusError(code, details));
  };

  const onRateLimited = (call: grpc.ServerDuplexStream<unknown, unknown>): void => {
    counts.rateLimited++;
    limitedSinceWarn++;
    log.debug('new stream refused: rate limit', { peer: call.getPeer(), path: call.getPath(), limit: opts.maxRequestsPerSecond });
    const now = clock.now();
    if (now - lastWarnAt >= WARN_EVERY_MS) {
      log.warn('new xDS streams refused by the rate limit (PILOT_MAX_REQUESTS_PER_SECOND)', {
        refused: limitedSinceWarn,
        totalRefused: counts.rateLimited,
        limit: opts.maxRequestsPerSecond,
      });
      lastWarnAt = now;
      limitedSinceWarn = 0;
    }
    refuse(call, grpc.status.RESOURCE_EXHAUSTED, `request rate limit exceeded: ${opts.maxRequestsPerSecond} new streams per second, would wait over ${maxWaitMs} ms`);
  };

  const forget = (call: grpc.ServerDuplexStream<unknown, unknown>): void => {
    if (!active.delete(call)) return;
    if (active.size === 0) for (const w of idleWaiters.splice(0)) w();
  };

  const admit = <Req, Res>(call: grpc.ServerDuplexStream<Req, Res>, handler: BidiHandler<Req, Res>): void => {
    const c = call as grpc.ServerDuplexStream<unknown, unknown>;
    counts.admitted++;
    active.add(c);
    const done = (): void => forget(c);
    call.once('cancelled', done);
    call.once('close', done);
    call.once('finish', done);
    handler(call);
  };

  const gate: StreamGate = {
    wrap<Req, Res>(handler: BidiHandler<Req, Res>): BidiHandler<Req, Res> {
      return (call) => {
        const c = call as grpc.ServerDuplexStream<unknown, unknown>;
        if (draining) {
          counts.refusedDraining++;
          refuse(c, grpc.status.UNAVAILABLE, 'server is shutting down');
          return;
        }
        const r = bucket.reserve(clock.now(), maxWaitMs);
        if (!r) {
          onRateLimited(c);
          return;
        }
        if (r.delayMs <= 0) {
          admit(call, handler);
          return;
        }
        let timer: TimerHandle | undefined;
        const onGone = (): void => {
          if (timer === undefined) return;
          clock.clearTimeout(timer);
          timer = undefined;
          waiting.delete(c);
          r.cancel();
          counts.abandoned++;
        };
        call.once('cancelled', onGone);
        waiting.set(c, () => {
          if (timer === undefined) return;
          clock.clearTimeout(timer);
          timer = undefined;
          call.off('cancelled', onGone);
          counts.refusedDraining++;
          refuse(c, grpc.status.UNAVAILABLE, 'server is shutting down');
        });
        timer = clock.setTimeout(() => {
          timer = undefined;
          waiting.delete(c);
          call.off('cancelled', onGone);
          admit(call, handler);
        }, r.delayMs);
      };
    },
    wrapService(definition, impl) {
      const out: grpc.UntypedServiceImplementation = {};
      for (const [name, fn] of Object.entries(impl)) {
        const def = definition[name];
        out[name] = def?.requestStream && def.responseStream ? (gate.wrap(fn as BidiHandler<unknown, unknown>) as grpc.UntypedHandleCall) : fn;
      }
      return out;
    },
    drain() {
      if (draining) return;
      draining = true;
      for (const fail of [...waiting.values()]) fail();
      waiting.clear();
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
