/**
 * What every simulated proxy does the same way: one ADS stream (SotW or Delta) on its own
 * connection, reconnects with backoff (resending every subscription with what it holds), ACKs
 * every response, keeps what it holds (bench/load-gen/holdings.ts), reports when it is synced
 * and when a watched change has reached it. Subclasses decide the node and what to subscribe to.
 */
import { nowMs, type AdsNode } from '../../test/support/raw-ads-client.js';
import { TYPE } from '../../test/support/xds-resources.js';
import { Holdings } from './holdings.js';
import type { ProxyPlan, Until } from './protocol.js';
import { backoffMs, deltaStream, sotwStream, type ProxyStream, type Resp } from './proxy-stream.js';
import { shortType, WatchState } from './watch-condition.js';

/** Counters shared by every proxy of the process. */
export interface ProxyCounters {
  bytes: number;
  responses: Record<string, number>;
}

export interface ClientHooks {
  readonly counters: ProxyCounters;
  readonly delta: boolean;
  onSynced(c: SimulatedClient): void;
  onConverged(c: SimulatedClient): void;
  onResponse(c: SimulatedClient, at: number): void;
}

/** A type's subscription: wildcard (Envoy's LDS/CDS) or these names. */
interface Want {
  readonly wildcard: boolean;
  names: string[];
}

/** Request order on a (re)connected stream. */
const ORDER = [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS];

export abstract class SimulatedClient {
  protected readonly held = new Holdings();
  private readonly want = new Map<string, Want>();
  private stream: ProxyStream | undefined;
  private readonly deltaVersions = new Map<string, Map<string, string>>();
  private readonly accepted = new Map<string, string>();
  private closed = false;
  private attempt = 0;
  private watchState: WatchState | undefined;
  openedAt = 0;
  syncedAt: number | undefined;
  reconnects = 0;
  bytes = 0;
  responseCount = 0;
  /** Responses that changed nothing the proxy held (the same resources again). */
  noopResponses = 0;
  /** Responses received per short type name. */
  readonly responses: Record<string, number> = {};
  readonly streamErrors: Record<string, number> = {};

  constructor(
    private readonly addr: string,
    readonly plan: ProxyPlan,
    private readonly hooks: ClientHooks,
  ) {}

  protected abstract node(): AdsNode;
  /** Re-derives the names of the types that depend on `typeUrl` from what is held, after a response of it. */
  protected abstract follow(typeUrl: string): void;

  get holdings(): Holdings {
    return this.held;
  }

  protected subscribeWildcard(typeUrl: string): void {
    this.want.set(typeUrl, { wildcard: true, names: [] });
  }

  /** Sets the names of a non-wildcard type; sends the change if the stream is up and they differ. */
  protected setNames(typeUrl: string, names: readonly string[]): void {
    const next = [...new Set(names)].sort();
    const cur = this.want.get(typeUrl);
    if (cur && sameSorted(cur.names, next)) return;
    if (!cur && next.length === 0) return;
    const previous = cur?.names ?? [];
    this.want.set(typeUrl, { wildcard: false, names: next });
    this.stream?.subscribe(typeUrl, next, previous);
  }

  start(): void {
    const s = this.hooks.delta ? deltaStream(this.addr, this.node(), this.deltaVersions) : sotwStream(this.addr, this.node());
    this.stream = s;
    this.openedAt = nowMs();
    s.onResponse((r) => {
      try {
        this.onResponse(r);
      } catch (err) {
        this.countError(`client: ${(err as Error).message}`);
      }
    });
    void s.ended.then((end) => {
      if (this.closed) return;
      this.countError(`${end.code} ${end.details}`);
      s.close();
      this.stream = undefined;
      setTimeout(() => {
        if (this.closed) return;
        this.reconnects++;
        this.start();
      }, backoffMs(this.attempt++)).unref();
    });
    for (const typeUrl of ORDER) {
      const w = this.want.get(typeUrl);
      if (w && (w.wildcard || w.names.length > 0)) s.init(typeUrl, w.names, this.accepted.get(typeUrl) ?? '');
    }
  }

  private countError(key: string): void {
    // grpc-js details carry a timestamp and a resolution note: keep what identifies the error.
    const k = key
      .replace(/\s*\(\d{4}-\d\d-\d\dT[^)]*\)/g, '')
      .replace(/\.?\s*Resolution note:.*$/, '')
      .slice(0, 120);
    this.streamErrors[k] = (this.streamErrors[k] ?? 0) + 1;
  }

  private onResponse(r: Resp): void {
    const short = shortType(r.typeUrl);
    const c = this.hooks.counters;
    c.bytes += r.bytes;
    c.responses[short] = (c.responses[short] ?? 0) + 1;
    this.responses[short] = (this.responses[short] ?? 0) + 1;
    this.bytes += r.bytes;
    this.responseCount++;
    this.attempt = 0;
    if (!this.held.apply(r)) this.noopResponses++;
    this.accepted.set(r.typeUrl, r.versionInfo);
    r.ack();
    this.follow(r.typeUrl);
    this.hooks.onResponse(this, r.at);
    if (this.syncedAt === undefined && this.isSynced()) {
      this.syncedAt = nowMs();
      this.hooks.onSynced(this);
    }
    const w = this.watchState;
    if (w && w.convergedAt === undefined && w.typeUrl === r.typeUrl && w.check(this.held, r.at)) this.hooks.onConverged(this);
  }

  /** Every type subscribed: wildcard ones received, every named resource held. */
  protected isSynced(): boolean {
    for (const [typeUrl, w] of this.want) {
      if (w.wildcard ? !this.held.received(typeUrl) : !this.held.holdsAll(typeUrl, w.names)) return false;
    }
    return true;
  }

  /** Begins watching for `until` (an expected proxy); clears any earlier watch. */
  watch(until: Until | undefined): void {
    this.watchState = until ? new WatchState(until, this.held) : undefined;
  }

  get convergedAt(): number | undefined {
    return this.watchState?.convergedAt;
  }

  close(): void {
    this.closed = true;
    this.stream?.close();
  }
}

function sameSorted(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
