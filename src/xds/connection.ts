import type { WireMessage } from './wire-message.js';
import type { Proxy } from '../model/index.js';
import type { WatchedResource } from './watched-resource.js';
import type { BudgetRelease, WriteBudget } from './write-budget.js';

/** What the stream layer needs from a transport: write one encoded response, and close. */
export interface ResponseSink {
  /** Resolves once the message is handed to the transport (backpressure: wait before the next). */
  write(message: WireMessage): Promise<void>;
  end(): void;
  /** Ends the stream with an error status (a proxy that stopped reading); the stream's close follows. */
  abort?(message: string): void;
  /** Ends the stream with a gRPC status: a request the server will not serve on this stream. */
  reject?(code: number, message: string): void;
}

/**
 * One ADS stream from one proxy. Per-type state lives in immutable WatchedResource records that
 * this class swaps; nothing outside changes it except through its methods.
 */
export class Connection {
  readonly id: string;
  readonly proxy: Proxy;
  readonly connectedAt: number;
  readonly peer: string;
  /** A Delta ADS stream (DeltaAggregatedResources) rather than state of the world. */
  readonly delta: boolean;
  private readonly watchedByType = new Map<string, WatchedResource>();
  private readonly sink: ResponseSink;
  private readonly budget: WriteBudget | undefined;
  /** Writes the transport has not taken yet, oldest first (when each was handed over; its promise): ended, budget given back, when the stream closes. */
  private readonly pending = new Map<() => void, { readonly at: number; readonly taken: Promise<void> }>();
  /** Checks the oldest pending write against the send timeout; armed while writes are pending. */
  private watchdog: NodeJS.Timeout | undefined;
  private bytesSentTotal = 0;
  private closed = false;
  private readonly onWatch: ((conn: Connection, typeUrl: string, w: WatchedResource | undefined) => void) | undefined;
  private readonly sendTimeoutMs: number;

  constructor(init: {
    id: string;
    proxy: Proxy;
    connectedAt: number;
    peer: string;
    sink: ResponseSink;
    delta?: boolean;
    budget?: WriteBudget;
    /**
     * A response the transport has not taken after this long means the proxy stopped reading: the
     * stream is aborted, so it gives back its share of the write budget (0: wait forever).
     */
    sendTimeoutMs?: number;
    /** Told of every per-type state change (the server's ConnectionIndex). */
    onWatch?: (conn: Connection, typeUrl: string, w: WatchedResource | undefined) => void;
  }) {
    this.budget = init.budget;
    this.sendTimeoutMs = init.sendTimeoutMs ?? 0;
    this.onWatch = init.onWatch;
    this.id = init.id;
    this.delta = init.delta ?? false;
    this.proxy = init.proxy;
    this.connectedAt = init.connectedAt;
    this.peer = init.peer;
    this.sink = init.sink;
  }

  watched(typeUrl: string): WatchedResource | undefined {
    return this.watchedByType.get(typeUrl);
  }

  /** How many types the stream watches. */
  watchedCount(): number {
    return this.watchedByType.size;
  }

  watchedTypes(): readonly WatchedResource[] {
    return [...this.watchedByType.values()];
  }

  setWatched(typeUrl: string, w: WatchedResource | undefined): void {
    if (w) this.watchedByType.set(typeUrl, w);
    else this.watchedByType.delete(typeUrl);
    this.onWatch?.(this, typeUrl, w);
  }

  /**
   * Takes `bytes` from the shared write budget (waiting while other responses fill it). Call it
   * before encoding a response of that size and hand the release to send().
   */
  async reserve(bytes: number): Promise<BudgetRelease> {
    return this.budget ? this.budget.acquire(bytes) : () => {};
  }

  /** Writes one encoded response; resolves (and gives back its budget) once the transport took it or the stream closed. */
  async send(bytes: WireMessage, release: BudgetRelease = () => {}): Promise<void> {
    if (this.closed) {
      release();
      return;
    }
    this.bytesSentTotal += bytes.byteLength;
    let resolveTaken!: () => void;
    const taken = new Promise<void>((resolve) => (resolveTaken = resolve));
    const done = (): void => {
      if (!this.pending.delete(done)) return;
      release();
      resolveTaken();
    };
    this.pending.set(done, { at: performance.now(), taken });
    this.armWatchdog();
    this.sink.write(bytes).then(done, done);
    await taken;
  }

  /** Resolves once the transport has taken every response written so far (or the stream closed). */
  async drained(): Promise<void> {
    if (this.pending.size === 0) return;
    await Promise.all([...this.pending.values()].map((e) => e.taken));
  }

  /** Responses handed to the transport and not yet taken by it (a proxy that stopped reading holds one). */
  pendingWrites(): number {
    return this.pending.size;
  }

  bytesSent(): number {
    return this.bytesSentTotal;
  }

  isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.markClosed();
    this.sink.end();
  }

  /** Ends the stream with a gRPC status (`code`) and a message saying why. */
  reject(code: number, message: string): void {
    if (this.closed) return;
    this.markClosed();
    if (this.sink.reject) this.sink.reject(code, message);
    else this.sink.end();
  }

  /**
   * One timer per stream rather than one per write (a mesh-wide push writes to every stream at
   * once): when it fires, the oldest pending write either outlived the timeout or sets the next check.
   */
  private armWatchdog(): void {
    if (this.sendTimeoutMs <= 0 || this.watchdog !== undefined) return;
    const check = (): void => {
      this.watchdog = undefined;
      const oldest = this.pending.values().next();
      if (oldest.done === true || this.closed) return;
      const left = oldest.value.at + this.sendTimeoutMs - performance.now();
      if (left <= 0) this.stalled();
      else this.watchdog = setTimeout(check, left).unref();
    };
    this.watchdog = setTimeout(check, this.sendTimeoutMs).unref();
  }

  /** A write outlived the send timeout: end the stream and give its writes' budget back. */
  private stalled(): void {
    if (this.closed) return;
    this.sink.abort?.(`no response taken by the transport within ${this.sendTimeoutMs} ms: the proxy stopped reading`);
    this.markClosed();
  }

  /** The stream is gone: writes it never completes must not hold the budget or a push worker. */
  markClosed(): void {
    this.closed = true;
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
    for (const done of [...this.pending.keys()]) done();
  }
}
