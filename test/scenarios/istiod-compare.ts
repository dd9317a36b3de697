/**
 * Facets of an Envoy config (proto3 JSON of LDS/RDS/CDS/EDS resources) that meshpilot and istiod
 * must agree on, flattened to `path → value` so two proxies' configs diff line by line. Everything
 * else (stat prefixes, tracing, metadata, timeouts istiod sets by habit) is left out on purpose.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJson, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { xdsJsonRegistry } from '../../src/model/json-registry.js';
import type { GeneratedConfig } from '../support/scenario.js';

type J = { readonly [k: string]: JsonValue };

/** One proxy's config as proto3 JSON, in the shape of the committed istiod corpus. */
export interface ConfigJson {
  readonly listeners: readonly JsonValue[];
  readonly routes: readonly JsonValue[];
  readonly clusters: readonly JsonValue[];
  readonly endpoints: readonly JsonValue[];
}

export function generatedToJson(c: GeneratedConfig): ConfigJson {
  const registry = xdsJsonRegistry();
  const j = (schema: DescMessage, ms: readonly unknown[]): JsonValue[] => ms.map((m) => toJson(schema, m as never, { registry }));
  return {
    listeners: j(ListenerSchema, c.listeners),
    routes: j(RouteConfigurationSchema, c.routes),
    clusters: j(ClusterSchema, c.clusters),
    endpoints: j(ClusterLoadAssignmentSchema, c.endpoints),
  };
}

/** sha256 over a config dir's file names and contents: tells whether a capture is of the current config. */
export function configDigest(dir: string): string {
  const h = createHash('sha256');
  for (const f of readdirSync(dir).sort())
    h.update(`${f}\0`)
      .update(readFileSync(join(dir, f)))
      .update('\0');
  return h.digest('hex');
}

export interface FacetOptions {
  /** Network and HTTP filter names dropped from filter lists before comparing (deliberately absent in meshpilot). */
  readonly ignoredFilters?: ReadonlySet<string>;
}

const obj = (v: JsonValue | undefined): J => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as J) : {});
const arr = (v: JsonValue | undefined): readonly JsonValue[] => (Array.isArray(v) ? v : []);
const str = (v: JsonValue | undefined): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
const shortType = (any: J): string => str(any['@type']).replace(/^.*\//, '');

/** JSON with sorted keys, so equal objects print equally. */
export function canonical(v: JsonValue | undefined): string {
  if (v === undefined) return 'none';
  const sort = (x: JsonValue): JsonValue => {
    if (Array.isArray(x)) return x.map(sort);
    if (x !== null && typeof x === 'object')
      return Object.fromEntries(
        Object.keys(x)
          .sort()
          .map((k) => [k, sort((x as J)[k]!)]),
      );
    return x;
  };
  return JSON.stringify(sort(v));
}

/** Flattened facets: path → value. */
export type Facets = Map<string, string>;

export function facets(config: ConfigJson, opts: FacetOptions = {}): Facets {
  const out: Facets = new Map();
  const ignored = opts.ignoredFilters ?? new Set<string>();
  const names = (fs: JsonValue | undefined): string[] =>
    arr(fs)
      .map((f) => str(obj(f).name))
      .filter((n) => !ignored.has(n));
  for (const l of config.listeners.map(obj)) listenerFacets(out, l, names);
  for (const c of config.clusters.map(obj)) clusterFacets(out, c);
  for (const rc of config.routes.map(obj)) routeFacets(out, rc);
  for (const e of config.endpoints.map(obj)) endpointFacets(out, e);
  return out;
}

/** Where a chain's terminal filter sends traffic: the tcp_proxy cluster(s) or the HCM's route config. */
function chainTarget(filters: readonly J[]): string {
  for (const f of filters) {
    const cfg = obj(f.typedConfig);
    const type = shortType(cfg);
    if (type.endsWith('TcpProxy')) {
      const w = arr(obj(cfg.weightedClusters).clusters).map(obj);
      return w.length > 0 ? `tcp ${w.map((c) => `${str(c.name)}:${str(c.weight)}`).join(', ')}` : `tcp ${str(cfg.cluster)}`;
    }
    if (type.endsWith('HttpConnectionManager')) {
      // An inline route config's name only shows in stats; where it routes is in the cluster facets.
      return cfg.rds ? `rds ${str(obj(cfg.rds).routeConfigName)}` : 'inline route';
    }
  }
  return '-';
}

function matchKey(m: J): string {
  const key = {
    ...(m.destinationPort !== undefined ? { port: m.destinationPort } : {}),
    ...(m.transportProtocol !== undefined ? { transport: m.transportProtocol } : {}),
    ...(m.applicationProtocols !== undefined ? { alpn: arr(m.applicationProtocols).map(str).sort() } : {}),
    ...(m.serverNames !== undefined ? { sni: arr(m.serverNames).map(str).sort() } : {}),
  };
  return Object.keys(key).length === 0 ? 'catch-all' : canonical(key);
}

function listenerFacets(out: Facets, l: J, names: (fs: JsonValue | undefined) => string[]): void {
  const base = `listener ${str(l.name)}`;
  out.set(base, 'present');
  out.set(`${base} listener_filters`, names(l.listenerFilters).join(', '));
  out.set(`${base} use_original_dst`, String(l.useOriginalDst === true));
  out.set(`${base} traffic_direction`, str(l.trafficDirection) || 'UNSPECIFIED');
  const chains = arr(l.filterChains).map(obj);
  const keys = chains.map((fc) => matchKey(obj(fc.filterChainMatch)));
  // A match-all chain and default_filter_chain both take what no other chain matches; the default
  // is only reachable when there is no match-all chain.
  if (l.defaultFilterChain) {
    chains.push(obj(l.defaultFilterChain));
    keys.push(keys.includes('catch-all') ? 'default (unreachable)' : 'catch-all');
  }
  const seen = new Map<string, number>();
  chains.forEach((fc, i) => {
    const key = keys[i]!;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    const path = `${base} chain ${key}${n > 1 ? ` #${n}` : ''}`;
    const filters = arr(fc.filters).map(obj);
    out.set(`${path} filters`, `${names(fc.filters).join(', ')} → ${chainTarget(filters)}`);
    out.set(`${path} tls`, downstreamTls(fc.transportSocket ? obj(fc.transportSocket) : undefined));
    for (const f of filters) {
      const cfg = obj(f.typedConfig);
      if (!shortType(cfg).endsWith('HttpConnectionManager')) continue;
      out.set(`${path} http_filters`, names(cfg.httpFilters).join(', '));
      out.set(`${path} hcm`, hcmSettings(cfg));
    }
  });
}

/** A chain's server-side TLS: whether it terminates TLS, client certificates, ALPN, SDS secret names. */
function downstreamTls(ts: J | undefined): string {
  if (!ts || Object.keys(ts).length === 0) return 'none';
  const cfg = obj(ts.typedConfig);
  const common = obj(cfg.commonTlsContext);
  const certs = arr(common.tlsCertificateSdsSecretConfigs).map((c) => str(obj(c).name));
  const alpn = arr(common.alpnProtocols).map(str);
  return `${shortType(cfg)} require_client_cert=${String(cfg.requireClientCertificate === true)} alpn=${alpn.join(',') || '-'} certs=${certs.join(',') || '-'}`;
}

function tlsSummary(ts: J | undefined): string {
  if (!ts || Object.keys(ts).length === 0) return 'none';
  const cfg = obj(ts.typedConfig);
  const type = shortType(cfg);
  if (!type.endsWith('UpstreamTlsContext')) return `${str(ts.name)} (${type})`;
  const alpn = arr(obj(cfg.commonTlsContext).alpnProtocols).map(str);
  return `${str(ts.name)} (${type}) sni=${str(cfg.sni) || '-'} alpn=${alpn.join(',') || '-'}`;
}

function lbSummary(c: J): string {
  const policies = arr(obj(c.loadBalancingPolicy).policies).map((p) => shortType(obj(obj(obj(p).typedExtensionConfig).typedConfig)));
  if (policies.length > 0) return `load_balancing_policy ${policies.join(' > ')}`;
  return str(c.lbPolicy) || 'ROUND_ROBIN';
}

function clusterFacets(out: Facets, c: J): void {
  const base = `cluster ${str(c.name)}`;
  out.set(base, 'present');
  const clusterType = obj(c.clusterType);
  out.set(`${base} type`, clusterType.name !== undefined ? `custom ${str(clusterType.name)}` : str(c.type) || 'STATIC');
  out.set(`${base} lb`, lbSummary(c));
  out.set(`${base} tls`, tlsSummary(c.transportSocket ? obj(c.transportSocket) : undefined));
  const matches = arr(c.transportSocketMatches).map(obj);
  out.set(
    `${base} tls_matches`,
    matches.length === 0
      ? 'none'
      : matches.map((m) => `${str(m.name)} ${canonical(m.match)} → ${tlsSummary(obj(m.transportSocket))}`).join(' | '),
  );
  // track_remaining only adds stats; kept apart so it cannot hide a threshold difference.
  const thresholds = arr(obj(c.circuitBreakers).thresholds).map(obj);
  out.set(`${base} circuit_breakers`, canonical(thresholds.map(({ trackRemaining: _, ...t }) => t)));
  out.set(`${base} circuit_breakers track_remaining`, thresholds.map((t) => String(t.trackRemaining === true)).join(', '));
  out.set(`${base} outlier_detection`, canonical(c.outlierDetection));
  // STATIC / STRICT_DNS clusters carry their endpoints inline.
  if (c.loadAssignment) endpointFacets(out, obj(c.loadAssignment), `${base} load_assignment`);
}

function actionSummary(r: J): string {
  if (r.directResponse) return `direct_response ${str(obj(r.directResponse).status)}`;
  if (r.redirect) return `redirect ${canonical(r.redirect)}`;
  const a = obj(r.route);
  if (a.cluster !== undefined) return `cluster ${str(a.cluster)}`;
  if (a.weightedClusters) {
    return `weighted ${arr(obj(a.weightedClusters).clusters)
      .map(obj)
      .map((w) => `${str(w.name)}:${str(w.weight)}`)
      .join(', ')}`;
  }
  if (a.clusterHeader !== undefined) return `cluster_header ${str(a.clusterHeader)}`;
  if (r.nonForwardingAction) return 'non_forwarding';
  return `unknown ${Object.keys(r).join(',')}`;
}

function routeFacets(out: Facets, rc: J): void {
  const base = `rds ${str(rc.name)}`;
  out.set(base, 'present');
  out.set(`${base} ignore_port_in_host_matching`, String(rc.ignorePortInHostMatching === true));
  for (const vh of arr(rc.virtualHosts).map(obj)) {
    const path = `${base} vhost ${str(vh.name)}`;
    out.set(path, 'present');
    out.set(`${path} domains`, arr(vh.domains).map(str).sort().join(', '));
    // require_tls is how a Gateway's httpsRedirect answers: a redirect for the whole vhost.
    out.set(`${path} require_tls`, str(vh.requireTls) || 'NONE');
    arr(vh.routes)
      .map(obj)
      .forEach((r, i) => {
        // case_sensitive defaults to true: istiod spells it out, meshpilot leaves it unset.
        const { caseSensitive, ...match } = obj(r.match);
        const m = caseSensitive === true ? match : obj(r.match);
        out.set(`${path} route[${i}]`, `${str(r.name) || '(unnamed)'} match=${canonical(m)} → ${actionSummary(r)}`);
        out.set(`${path} route[${i}] policy`, routePolicy(r));
      });
  }
}

/**
 * What a route does besides choosing a destination: timeout, retries, rewrites, header mutations,
 * hash policy, mirrors and per-filter configs (fault, CORS …), canonical so order of keys is moot.
 */
function routePolicy(r: J): string {
  const a = obj(r.route);
  const pick = (o: J, keys: readonly string[]): J => Object.fromEntries(keys.flatMap((k) => (o[k] === undefined ? [] : [[k, o[k]]]))) as J;
  return canonical({
    route: pick(a, [
      'timeout',
      'retryPolicy',
      'prefixRewrite',
      'regexRewrite',
      'hostRewriteLiteral',
      'hashPolicy',
      'requestMirrorPolicies',
      'maxStreamDuration',
    ]),
    headers: pick(r, ['requestHeadersToAdd', 'requestHeadersToRemove', 'responseHeadersToAdd', 'responseHeadersToRemove']),
    perFilter: r.typedPerFilterConfig ?? {},
  });
}

/**
 * The connection manager's behaviour: addressing, XFCC, path handling, upgrades, timeouts,
 * protocol options. Stat prefixes and the request-id extension (Envoy's default is the same UUID
 * generator istiod names) are left out: stats only.
 */
function hcmSettings(cfg: J): string {
  const keys = [
    'useRemoteAddress',
    'forwardClientCertDetails',
    'setCurrentClientCertDetails',
    'serverName',
    'normalizePath',
    'mergeSlashes',
    'pathWithEscapedSlashesAction',
    'proxy100Continue',
    'upgradeConfigs',
    'streamIdleTimeout',
    'httpProtocolOptions',
    'http2ProtocolOptions',
    'commonHttpProtocolOptions',
    'xffNumTrustedHops',
    'preserveExternalRequestId',
    'internalAddressConfig',
  ];
  return canonical(Object.fromEntries(keys.flatMap((k) => (cfg[k] === undefined ? [] : [[k, cfg[k]]]))) as J);
}

/** Endpoint addresses (with their auto-mTLS label) and localities of a ClusterLoadAssignment. */
function endpointFacets(out: Facets, cla: J, base = `eds ${str(cla.clusterName)}`): void {
  const addrs: string[] = [];
  const localities: string[] = [];
  for (const le of arr(cla.endpoints).map(obj)) {
    const loc = obj(le.locality);
    localities.push(`${str(loc.region)}/${str(loc.zone)}/${str(loc.subZone)} priority=${str(le.priority) || '0'}`);
    for (const e of arr(le.lbEndpoints).map(obj)) {
      const sa = obj(obj(obj(e.endpoint).address).socketAddress);
      // The auto-mTLS label a cluster's transport_socket_matches select on.
      const tlsMode = str(obj(obj(obj(e.metadata).filterMetadata)['envoy.transport_socket_match']).tlsMode);
      addrs.push(`${str(sa.address)}:${str(sa.portValue)}${tlsMode ? ` tlsMode=${tlsMode}` : ''}`);
    }
  }
  out.set(base, addrs.sort().join(', '));
  out.set(`${base} localities`, localities.sort().join(', '));
}

/** One facet that differs: `undefined` on a side means the facet is absent there. */
export interface Difference {
  readonly path: string;
  readonly istiod: string | undefined;
  readonly meshpilot: string | undefined;
}

/** Differing facets; a resource present on one side only is one difference, not one per facet. */
export function diffFacets(istiod: Facets, meshpilot: Facets): Difference[] {
  const out: Difference[] = [];
  const absentParents: string[] = [];
  for (const path of [...new Set([...istiod.keys(), ...meshpilot.keys()])].sort()) {
    if (absentParents.some((p) => path.startsWith(`${p} `))) continue;
    const a = istiod.get(path);
    const b = meshpilot.get(path);
    if (a === b) continue;
    if (a === 'present' || b === 'present') absentParents.push(path);
    out.push({ path, istiod: a, meshpilot: b });
  }
  return out;
}

export function formatDifferences(proxy: string, diffs: readonly Difference[]): string {
  return diffs
    .map((d) => `${proxy}: ${d.path}\n  - istiod:    ${d.istiod ?? '(absent)'}\n  + meshpilot: ${d.meshpilot ?? '(absent)'}`)
    .join('\n');
}
