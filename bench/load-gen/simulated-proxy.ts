import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import type { Any } from '@bufbuild/protobuf/wkt';
import { AdsStream, nowMs, proxylessAdsNode, type AdsNode, type StreamEnd } from '../../test/support/raw-ads-client.js';
import { DeltaStream } from '../../test/support/raw-delta-client.js';
import { clusterEdsName, listenerRouteName, routeClusters, TYPE, unpack } from '../../test/support/xds-resources.js';

/** Short names for the four types, in the order a client subscribes to them. */
export const CHAIN = [
  ['lds', TYPE.LDS],
  ['rds', TYPE.RDS],
  ['cds', TYPE.CDS],
  ['eds', TYPE.EDS],
] as const;
const SHORT: Record<string, string> = Object.fromEntries(CHAIN.map(([s, t]) => [t, s]));

export function shortType(typeUrl: string): string {
  return SHORT[typeUrl] ?? typeUrl;
}

/** One response as the simulated proxy sees it, from either protocol. */
interface Resp {
  readonly typeUrl: string;
  readonly versionInfo: string;
  readonly resources: readonly Any[];
  readonly removed: readonly string[];
  /** SotW LDS/CDS: the response is the complete set (anything absent is deleted). */
  readonly full: boolean;
  readonly bytes: number;
  readonly at: number;
  ack(): void;
}

/** The few stream operations the simulated proxy needs, over SotW or Delta. */
interface ProxyStream {
  readonly ended: Promise<StreamEnd>;
  /** First requests on a (re)connected stream: names per type, with what was held before. */
  init(typeUrl: string, names: readonly string[], version: string): void;
  subscribe(typeUrl: string, names: readonly string[], previous: readonly string[]): void;
  onResponse(fn: (r: Resp) => void): void;
  close(): void;
}

function sotwStream(addr: string, node: AdsNode): ProxyStream {
  const s = AdsStream.open(addr, { node, separateConnection: true, passive: true });
  return {
    ended: s.ended,
    init: (typeUrl, names, version) => s.send({ typeUrl, resourceNames: names, versionInfo: version, responseNonce: '' }),
    subscribe: (typeUrl, names) => s.subscribe(typeUrl, names),
    onResponse: (fn) =>
      s.onResponse((r) =>
        fn({
          typeUrl: r.resp.typeUrl,
          versionInfo: r.resp.versionInfo,
          resources: r.resp.resources,
          removed: [],
          full: r.resp.typeUrl === TYPE.LDS || r.resp.typeUrl === TYPE.CDS,
          bytes: r.bytes,
          at: r.at,
          ack: () => s.ack(r.resp),
        }),
      ),
    close: () => s.close(),
  };
}

/** Delta: per-resource versions survive reconnects (initial_resource_versions), as Envoy keeps them. */
function deltaStream(addr: string, node: AdsNode, held: Map<string, Map<string, string>>): ProxyStream {
  const s = DeltaStream.open(addr, { node, separateConnection: true, passive: true });
  const versions = (typeUrl: string): Map<string, string> => {
    let m = held.get(typeUrl);
    if (!m) held.set(typeUrl, (m = new Map()));
    return m;
  };
  return {
    ended: s.ended,
    init: (typeUrl, names) => s.send({ typeUrl, subscribe: names, initialVersions: Object.fromEntries(versions(typeUrl)) }),
    subscribe: (typeUrl, names, previous) => {
      const prev = new Set(previous);
      const next = new Set(names);
      s.send({ typeUrl, subscribe: names.filter((n) => !prev.has(n)), unsubscribe: previous.filter((n) => !next.has(n)) });
    },
    onResponse: (fn) =>
      s.onResponse((r) => {
        const v = versions(r.resp.typeUrl);
        for (const res of r.resp.resources) v.set(res.name, res.version);
        for (const n of r.resp.removedResources) v.delete(n);
        fn({
          typeUrl: r.resp.typeUrl,
          versionInfo: r.resp.systemVersionInfo,
          resources: r.resp.resources.flatMap((x) => (x.resource ? [x.resource] : [])),
          removed: r.resp.removedResources,
          full: false,
          bytes: r.bytes,
          at: r.at,
          ack: () => s.ack(r.resp),
        });
      }),
    close: () => s.close(),
  };
}

export interface ProxyCounters {
  bytes: number;
  responses: Record<string, number>;
}

/** Backoff as grpc's connection backoff: 1 s initial, ×1.6, ±20% jitter, capped (10 s here). */
function backoffMs(attempt: number): number {
  const base = Math.min(1000 * 1.6 ** attempt, 10_000);
  return base * (0.8 + 0.4 * Math.random());
}

/**
 * One simulated proxyless gRPC client: subscribes LDS for its listeners, then follows the names in
 * the responses (LDS → RDS → CDS → EDS), ACKs every response, and reconnects with backoff when its
 * stream fails (resending every subscription with its old versions and an empty nonce).
 */
export class SimulatedProxy {
  private stream: ProxyStream | undefined;
  private readonly deltaHeld = new Map<string, Map<string, string>>();
  private markerIn: 'rds' | 'eds' = 'rds';
  private closed = false;
  private attempt = 0;
  /** Subscribed names per type. */
  private readonly want = new Map<string, string[]>();
  /** Resources received per type: name → last Any value. */
  private readonly have = new Map<string, Map<string, Uint8Array>>();
  private readonly accepted = new Map<string, string>();
  private listenerRoutes = new Map<string, string>();
  private routeClusterNames = new Map<string, string[]>();
  private clusterEds = new Map<string, string>();
  syncedAt: number | undefined;
  markerAt: number | undefined;
  reconnects = 0;
  /** Responses received per short type name. */
  readonly responses: Record<string, number> = {};
  readonly streamErrors: Record<string, number> = {};
  private marker: Buffer | undefined;

  constructor(
    private readonly addr: string,
    readonly index: number,
    readonly listeners: readonly string[],
    private readonly counters: ProxyCounters,
    private readonly onSynced: (p: SimulatedProxy) => void,
    private readonly onMarker: (p: SimulatedProxy) => void,
    private readonly delta = false,
  ) {
    this.want.set(TYPE.LDS, [...listeners]);
  }

  /** Start watching for RouteConfigurations that contain `marker`. */
  watch(marker: string, where: 'rds' | 'eds' = 'rds'): void {
    this.marker = Buffer.from(marker, 'utf8');
    this.markerIn = where;
    this.markerAt = undefined;
  }

  start(): void {
    const node = proxylessAdsNode(`bench-proxy-${this.index}`, 'default', `10.${(this.index >> 16) & 255}.${(this.index >> 8) & 255}.${this.index & 255}`);
    const s = this.delta ? deltaStream(this.addr, node, this.deltaHeld) : sotwStream(this.addr, node);
    this.stream = s;
    s.onResponse((r) => {
      try {
        this.onResponse(s, r);
      } catch (err) {
        this.streamErrors[`client: ${(err as Error).message}`] = (this.streamErrors[`client: ${(err as Error).message}`] ?? 0) + 1;
      }
    });
    void s.ended.then((end) => {
      if (this.closed) return;
      const key = `${end.code} ${end.details}`.slice(0, 120);
      this.streamErrors[key] = (this.streamErrors[key] ?? 0) + 1;
      s.close();
      const delay = backoffMs(this.attempt++);
      setTimeout(() => {
        if (this.closed) return;
        this.reconnects++;
        this.start();
      }, delay).unref();
    });
    // Initial requests: every type we already know names for, with the last accepted version
    // (a reconnect), else just LDS.
    for (const [, typeUrl] of CHAIN) {
      const names = this.want.get(typeUrl);
      if (!names || names.length === 0) continue;
      s.init(typeUrl, names, this.accepted.get(typeUrl) ?? '');
    }
  }

  private onResponse(s: ProxyStream, resp: Resp): void {
    const r = resp;
    const short = shortType(resp.typeUrl);
    this.counters.bytes += r.bytes;
    this.counters.responses[short] = (this.counters.responses[short] ?? 0) + 1;
    this.responses[short] = (this.responses[short] ?? 0) + 1;
    this.attempt = 0;
    let have = this.have.get(resp.typeUrl);
    if (!have) {
      have = new Map();
      this.have.set(resp.typeUrl, have);
    }
    if (resp.full) {
      have.clear();
      if (resp.typeUrl === TYPE.LDS) this.listenerRoutes = new Map();
      if (resp.typeUrl === TYPE.CDS) this.clusterEds = new Map();
    }
    for (const name of resp.removed) {
      have.delete(name);
      this.listenerRoutes.delete(name);
      this.routeClusterNames.delete(name);
      this.clusterEds.delete(name);
    }
    const hasMarker = (a: Any, where: 'rds' | 'eds'): boolean =>
      this.marker !== undefined && this.markerIn === where && Buffer.from(a.value.buffer, a.value.byteOffset, a.value.byteLength).includes(this.marker);
    let sawMarker = false;
    switch (resp.typeUrl) {
      case TYPE.LDS: {
        for (const a of resp.resources) {
          const l = unpack(a, ListenerSchema);
          have.set(l.name, a.value);
          const rn = listenerRouteName(l);
          if (rn) this.listenerRoutes.set(l.name, rn);
        }
        break;
      }
      case TYPE.RDS: {
        for (const a of resp.resources) {
          const rc = unpack(a, RouteConfigurationSchema);
          have.set(rc.name, a.value);
          this.routeClusterNames.set(rc.name, routeClusters(rc));
          if (hasMarker(a, 'rds')) sawMarker = true;
        }
        break;
      }
      case TYPE.CDS: {
        for (const a of resp.resources) {
          const c = unpack(a, ClusterSchema);
          have.set(c.name, a.value);
          const eds = clusterEdsName(c);
          if (eds) this.clusterEds.set(c.name, eds);
        }
        break;
      }
      case TYPE.EDS: {
        for (const a of resp.resources) {
          have.set(unpack(a, ClusterLoadAssignmentSchema).clusterName, a.value);
          if (hasMarker(a, 'eds')) sawMarker = true;
        }
        break;
      }
      default:
        break;
    }
    this.accepted.set(resp.typeUrl, resp.versionInfo);
    resp.ack();
    if (sawMarker && this.markerAt === undefined) {
      this.markerAt = r.at;
      this.onMarker(this);
    }
    this.follow(s);
    if (this.syncedAt === undefined && this.isSynced()) {
      this.syncedAt = nowMs();
      this.onSynced(this);
    }
  }

  /** Subscribes the next types to the names the current config refers to, when they changed. */
  private follow(s: ProxyStream): void {
    const wantRoutes = uniq([...this.listenerRoutes.values()]);
    const wantClusters = uniq(wantRoutes.flatMap((rn) => this.routeClusterNames.get(rn) ?? []));
    const wantEds = uniq(wantClusters.map((c) => this.clusterEds.get(c)).filter((x): x is string => x !== undefined));
    for (const [typeUrl, names] of [
      [TYPE.RDS, wantRoutes],
      [TYPE.CDS, wantClusters],
      [TYPE.EDS, wantEds],
    ] as const) {
      const cur = this.want.get(typeUrl) ?? [];
      if (sameSet(cur, names)) continue;
      if (names.length === 0 && cur.length === 0) continue;
      this.want.set(typeUrl, names);
      s.subscribe(typeUrl, names, cur);
    }
  }

  /** Every subscribed name of every type has arrived (LDS and the names it led to). */
  private isSynced(): boolean {
    for (const [, typeUrl] of CHAIN) {
      const names = this.want.get(typeUrl);
      if (typeUrl !== TYPE.LDS && (!names || names.length === 0)) return false;
      const have = this.have.get(typeUrl);
      for (const n of names ?? []) if (!have?.has(n)) return false;
    }
    return true;
  }

  close(): void {
    this.closed = true;
    this.stream?.close();
  }
}

function uniq(xs: readonly string[]): string[] {
  return [...new Set(xs)].sort();
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const sa = [...a].sort();
  return b.every((x, i) => x === sa[i]);
}
