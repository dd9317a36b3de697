/**
 * istiod's PushQueue (pilot/pkg/xds/pushqueue.go) and push loop (doSendPushes): one pending
 * request per connection (merged, latest info wins), FIFO across connections, and a connection
 * being pushed is never handed out twice — requests for it wait and re-queue on markDone.
 */
import { availableParallelism } from 'node:os';
import { mergePushRequests, type PushRequest } from '../model/index.js';
import { errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/log.js';
import { Semaphore } from './semaphore.js';

export class PushQueue<C extends object> {
  // Queue order is a growable array with a moving head, so dequeue stays O(1) for many proxies.
  #order: C[] = [];
  #head = 0;
  readonly #pending = new Map<C, PushRequest>();
  /** Connections handed out and not yet markDone'd; the value is a request that arrived meanwhile. */
  readonly #processing = new Map<C, PushRequest | undefined>();
  readonly #waiters: Array<(item: readonly [C, PushRequest] | undefined) => void> = [];
  #shutdown = false;

  /** Queues a push for `conn`, merging with one already queued or held for it. */
  enqueue(conn: C, req: PushRequest): void {
    if (this.#shutdown) return;
    if (this.#processing.has(conn)) {
      const held = this.#processing.get(conn);
      this.#processing.set(conn, held === undefined ? req : mergePushRequests(held, req));
      return;
    }
    const queued = this.#pending.get(conn);
    if (queued !== undefined) {
      this.#pending.set(conn, mergePushRequests(queued, req));
      return;
    }
    this.#append(conn, req);
  }

  /** The next connection and its merged request; resolves to undefined once shut down. */
  dequeue(): Promise<readonly [C, PushRequest] | undefined> {
    if (this.#shutdown) return Promise.resolve(undefined);
    const item = this.#take();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Ends processing of `conn`; a request that arrived meanwhile goes to the back of the queue. */
  markDone(conn: C): void {
    if (!this.#processing.has(conn)) return;
    const held = this.#processing.get(conn);
    this.#processing.delete(conn);
    if (held !== undefined && !this.#shutdown) this.#append(conn, held);
  }

  /** Drops queued work and wakes every waiting dequeue with undefined. */
  shutdown(): void {
    if (this.#shutdown) return;
    this.#shutdown = true;
    this.#order = [];
    this.#head = 0;
    this.#pending.clear();
    for (const w of this.#waiters.splice(0)) w(undefined);
  }

  /** Connections queued and not yet handed out. */
  pending(): number {
    return this.#pending.size;
  }

  /** Connections handed out and not yet markDone'd. */
  processing(): number {
    return this.#processing.size;
  }

  isShutdown(): boolean {
    return this.#shutdown;
  }

  #append(conn: C, req: PushRequest): void {
    this.#pending.set(conn, req);
    this.#order.push(conn);
    // Waiters exist only while the queue is empty, so handing this item over keeps FIFO.
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter(this.#take());
  }

  #take(): readonly [C, PushRequest] | undefined {
    if (this.#head >= this.#order.length) return undefined;
    const conn = this.#order[this.#head] as C;
    this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
    const req = this.#pending.get(conn) as PushRequest;
    this.#pending.delete(conn);
    this.#processing.set(conn, undefined);
    return [conn, req] as const;
  }
}

/** istiod's PILOT_PUSH_THROTTLE default: min(15 + 5·cores, 100). */
export function defaultPushThrottle(cores: number = availableParallelism()): number {
  return Math.min(15 + 5 * cores, 100);
}

/** PILOT_PUSH_THROTTLE as given (0 or unset means the default). */
export function resolvePushThrottle(value: number | undefined, cores?: number): number {
  return value === undefined || value === 0 ? defaultPushThrottle(cores) : value;
}

/**
 * A push whose responses are written but not yet taken by the transport (a proxy that stopped
 * reading): its worker slot is free for other proxies, while the connection stays busy — later
 * requests for it merge — until `taken` settles.
 */
export interface PushInFlight {
  readonly taken: Promise<void>;
}

export type DoPush<C> = (conn: C, req: PushRequest) => Promise<PushInFlight | void> | PushInFlight | void;

export interface PushWorkerOptions {
  readonly logger?: Logger;
}

export interface PushWorkers {
  /** Pushes currently running. */
  inFlight(): number;
  /** Shuts the queue down; resolves when the loop has exited and running pushes have settled. */
  stop(): Promise<void>;
  /** Resolves when the loop has exited (queue shut down) and running pushes have settled. */
  readonly done: Promise<void>;
}

/** How long the push loop runs before it lets the event loop flush writes and read requests. */
const PUSH_SLICE_MS = 2;

/**
 * Runs pushes from `queue`, at most `limit` at a time. A slot is taken before dequeuing, as
 * istiod does, so while every slot is busy requests stay queued and keep merging.
 */
export function startPushWorkers<C extends object>(
  queue: PushQueue<C>,
  limit: number,
  doPush: DoPush<C>,
  opts: PushWorkerOptions = {},
): PushWorkers {
  const log = opts.logger ?? silentLogger;
  const sem = new Semaphore(limit);
  const running = new Set<Promise<void>>();

  const pushOne = async (conn: C, req: PushRequest): Promise<void> => {
    let taken: Promise<void> | undefined;
    try {
      const out = await doPush(conn, req);
      taken = out ? out.taken : undefined;
    } catch (err) {
      // One proxy's failure must never stop pushes to the others.
      log.warn('push to connection failed', { error: errorMessage(err), full: req.full });
    } finally {
      sem.release();
    }
    // A slow reader holds its connection, never a slot: istiod's throttle would otherwise let
    // PILOT_PUSH_THROTTLE proxies that stopped reading stall the pushes to every other proxy.
    if (taken) await taken.catch(() => {});
    queue.markDone(conn);
  };

  let sliceStart = performance.now();
  const loop = async (): Promise<void> => {
    for (;;) {
      // Pushes whose responses are ready resolve as microtasks, so without a yield a mesh-wide push
      // would write to every stream before the transport flushed one byte or read one request:
      // clients would sit idle and then all answer at once. Yielding to the event loop every slice
      // sends what is written and serves the requests that came in (Envoy's EDS follow-up to the
      // CDS just pushed), so proxies work in parallel with the rest of the push.
      if (performance.now() - sliceStart >= PUSH_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      await sem.acquire();
      // A slice counts from the first push after the queue ran dry (waiting for work yields anyway).
      const idle = queue.pending() === 0;
      const item = await queue.dequeue();
      if (idle) sliceStart = performance.now();
      if (item === undefined) {
        sem.release();
        break;
      }
      const p = pushOne(item[0], item[1]);
      running.add(p);
      void p.then(() => running.delete(p));
    }
    await Promise.all(running);
  };

  const done = loop();
  return {
    inFlight: () => running.size,
    stop() {
      queue.shutdown();
      return done;
    },
    done,
  };
}
