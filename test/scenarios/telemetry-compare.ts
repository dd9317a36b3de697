/**
 * The telemetry parts of listeners, flattened to `path → canonical JSON` so meshpilot's and istiod's
 * diff line by line. Per filter chain (keyed by listener name and the chain's match, not its name):
 * the HCM's `access_log`, `tracing`, `request_id_extension` and its `istio.stats` HTTP filter
 * configs; a TCP chain's `istio.stats` network filter configs and its tcp_proxy's `access_log`.
 * Per listener: its own `access_log` (istiod's log of connections no chain matched, NR).
 */
import type { JsonValue } from '@bufbuild/protobuf';
import { canonical } from './istiod-compare.js';

type J = { readonly [k: string]: JsonValue };
const obj = (v: JsonValue | undefined): J => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as J) : {});
const arr = (v: JsonValue | undefined): readonly JsonValue[] => (Array.isArray(v) ? v : []);
const typeOf = (cfg: J): string => String(cfg['@type'] ?? '').replace(/^.*\//, '');

const STATS = 'istio.stats';

export type TelemetryFacets = Map<string, string>;

/** Facets of every chain of every listener; a chain absent on one side is reported by `chains`. */
export function telemetryFacets(listeners: readonly JsonValue[]): TelemetryFacets {
  const out: TelemetryFacets = new Map();
  for (const l of listeners.map(obj)) {
    out.set(`${String(l.name)} | listener access_log`, canonical(l.accessLog ?? []));
    const chains = [
      ...arr(l.filterChains).map(obj),
      ...(l.defaultFilterChain ? [{ ...obj(l.defaultFilterChain), filterChainMatch: 'default' as JsonValue }] : []),
    ];
    const seen = new Map<string, number>();
    for (const fc of chains) {
      const match = canonical(fc.filterChainMatch ?? {});
      const n = (seen.get(match) ?? 0) + 1;
      seen.set(match, n);
      const base = `${String(l.name)} ${match}${n > 1 ? ` #${n}` : ''}`;
      const filters = arr(fc.filters).map(obj);
      const tcpStats: JsonValue[] = [];
      for (const f of filters) {
        const cfg = obj(f.typedConfig);
        if (f.name === STATS) tcpStats.push(cfg);
        if (typeOf(cfg).endsWith('TcpProxy')) {
          out.set(`${base} | tcp stats`, canonical(tcpStats));
          out.set(`${base} | tcp access_log`, canonical(cfg.accessLog ?? []));
        }
        if (typeOf(cfg).endsWith('HttpConnectionManager')) {
          out.set(
            `${base} | hcm stats`,
            canonical(
              arr(cfg.httpFilters)
                .map(obj)
                .filter((h) => h.name === STATS)
                .map((h) => h.typedConfig ?? null),
            ),
          );
          out.set(`${base} | hcm access_log`, canonical(cfg.accessLog ?? []));
          out.set(`${base} | hcm tracing`, canonical(cfg.tracing));
          out.set(`${base} | hcm request_id_extension`, canonical(cfg.requestIdExtension));
        }
      }
    }
  }
  return out;
}

export interface FacetDiff {
  readonly path: string;
  readonly istiod: string | undefined;
  readonly meshpilot: string | undefined;
}

/** Facets that differ on chains both sides have, and the chains (with telemetry facets) only istiod has. */
export function diffTelemetry(
  istiod: TelemetryFacets,
  meshpilot: TelemetryFacets,
): { readonly differ: FacetDiff[]; readonly missing: string[]; readonly compared: number } {
  // A listener's own facets count as its chain (`<listener>`).
  const chainOf = (path: string): string => path.slice(0, path.lastIndexOf(' | '));
  const mpChains = new Set([...meshpilot.keys()].map(chainOf));
  const differ: FacetDiff[] = [];
  const missing = new Set<string>();
  let compared = 0;
  for (const [path, value] of istiod) {
    if (!mpChains.has(chainOf(path))) {
      missing.add(chainOf(path));
      continue;
    }
    compared++;
    if (meshpilot.get(path) !== value) differ.push({ path, istiod: value, meshpilot: meshpilot.get(path) });
  }
  return { differ, missing: [...missing].sort(), compared };
}
