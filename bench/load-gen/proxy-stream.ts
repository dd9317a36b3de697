/**
 * The few ADS stream operations a simulated proxy needs, over state of the world or Delta, on top
 * of the raw test clients (test/support/raw-ads-client.ts, raw-delta-client.ts).
 */
import type { Any } from '@bufbuild/protobuf/wkt';
import { AdsStream, type AdsNode, type StreamEnd } from '../../test/support/raw-ads-client.js';
import { DeltaStream } from '../../test/support/raw-delta-client.js';
import { TYPE } from '../../test/support/xds-resources.js';
import { leanDiscoveryResponse } from './resource-wire.js';

/** One resource of a response: its name is known up front only in Delta (SotW reads it from the bytes). */
export interface RespItem {
  readonly name: string | undefined;
  readonly value: Uint8Array;
}

/** One response as the simulated proxy sees it, from either protocol. */
export interface Resp {
  readonly typeUrl: string;
  readonly versionInfo: string;
  readonly items: readonly RespItem[];
  readonly removed: readonly string[];
  /** SotW LDS/CDS: the response is the complete set (anything absent is deleted). */
  readonly full: boolean;
  readonly bytes: number;
  readonly at: number;
  ack(): void;
}

export interface ProxyStream {
  readonly ended: Promise<StreamEnd>;
  /**
   * First request of a type on a (re)connected stream: `names` (empty = wildcard), with the last
   * accepted version (SotW) or the versions held (Delta, kept across reconnects as Envoy does).
   */
  init(typeUrl: string, names: readonly string[], version: string): void;
  /** Changes the names of a non-wildcard type from `previous` to `names`. */
  subscribe(typeUrl: string, names: readonly string[], previous: readonly string[]): void;
  onResponse(fn: (r: Resp) => void): void;
  close(): void;
}

const anyItem = (a: Any): RespItem => ({ name: undefined, value: a.value });

export function sotwStream(addr: string, node: AdsNode): ProxyStream {
  const s = AdsStream.open(addr, { node, separateConnection: true, passive: true, decode: leanDiscoveryResponse });
  return {
    ended: s.ended,
    init: (typeUrl, names, version) => s.send({ typeUrl, resourceNames: names, versionInfo: version, responseNonce: '' }),
    subscribe: (typeUrl, names) => s.subscribe(typeUrl, names),
    onResponse: (fn) =>
      s.onResponse((r) =>
        fn({
          typeUrl: r.resp.typeUrl,
          versionInfo: r.resp.versionInfo,
          items: r.resp.resources.map(anyItem),
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
export function deltaStream(addr: string, node: AdsNode, held: Map<string, Map<string, string>>): ProxyStream {
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
          items: r.resp.resources.flatMap((x) => (x.resource ? [{ name: x.name, value: x.resource.value }] : [])),
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

/** Backoff as grpc's connection backoff: 1 s initial, ×1.6, ±20% jitter, capped (10 s here). */
export function backoffMs(attempt: number): number {
  const base = Math.min(1000 * 1.6 ** attempt, 10_000);
  return base * (0.8 + 0.4 * Math.random());
}
