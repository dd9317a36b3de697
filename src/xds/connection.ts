import type { Proxy } from '../model/proxy.js';
import type { WatchedResource } from './watched-resource.js';

/** What the stream layer needs from a transport: write one encoded response, and close. */
export interface ResponseSink {
  /** Resolves once the message is handed to the transport (backpressure: wait before the next). */
  write(bytes: Uint8Array): Promise<void>;
  end(): void;
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
  private bytesSentTotal = 0;
  private closed = false;

  constructor(init: { id: string; proxy: Proxy; connectedAt: number; peer: string; sink: ResponseSink; delta?: boolean }) {
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

  watchedTypes(): readonly WatchedResource[] {
    return [...this.watchedByType.values()];
  }

  setWatched(typeUrl: string, w: WatchedResource | undefined): void {
    if (w) this.watchedByType.set(typeUrl, w);
    else this.watchedByType.delete(typeUrl);
  }

  async send(bytes: Uint8Array): Promise<void> {
    if (this.closed) return;
    this.bytesSentTotal += bytes.byteLength;
    await this.sink.write(bytes);
  }

  bytesSent(): number {
    return this.bytesSentTotal;
  }

  isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sink.end();
  }

  markClosed(): void {
    this.closed = true;
  }
}
