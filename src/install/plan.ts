/**
 * Which Helm releases an install consists of, and each release's Helm inputs (values documents
 * and `--set` expressions) — exactly what one would pass to `helm template` for the same result.
 *
 * meshctl takes one values tree with istioctl's keys; it is routed by top-level key:
 *   profile, revision, global        → every release (every chart's schema knows them)
 *   base, defaultRevision            → the base chart
 *   cni                              → the cni chart (`cni.enabled=true` also adds that release and
 *                                      tells istiod `pilot.cni.enabled=true`, as istioctl does)
 *   gateways.<gateway>.<key>         → that gateway release as `<key>` (gateway chart values)
 *   anything else (pilot, meshConfig, sidecarInjectorWebhook, other gateways.*) → the meshpilot chart
 * so a key no chart knows is refused by the meshpilot chart's schema, naming the key.
 * Profiles select releases as istioctl's IstioOperator profiles do; the values a profile changes
 * live in manifests/profiles/<name>.yaml and are applied inside each chart (`profile` value).
 */
import { readFile } from 'node:fs/promises';
import { decodeYamlLikeGo } from '../template/index.js';
import { isMap, userValues, type GoMap } from './values.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';
import { MeshError } from '../util/errors.js';

export class ValuesError extends MeshError {
  /** The offending key (dotted, as the user wrote it) or `profile`. */
  readonly key: string;
  constructor(key: string, message: string) {
    super('INVALID_ARGUMENT', `invalid values: ${key}: ${message}`);
    this.name = 'ValuesError';
    this.key = key;
  }
}

export type ChartName = 'base' | 'meshpilot' | 'gateway' | 'cni';

export interface ReleasePlan {
  readonly chart: ChartName;
  readonly release: string;
  readonly namespace: string;
  /** `-f` documents, in order. */
  readonly valuesDocs: readonly GoMap[];
  /** `--set` expressions, in order. */
  readonly sets: readonly string[];
  /** Prefix that turns a key of this chart's values back into the user's key (`gateways.istio-ingressgateway.`). */
  readonly keyPrefix: string;
}

const INGRESS = 'istio-ingressgateway';
const EGRESS = 'istio-egressgateway';

/** The releases each profile installs (Istio's manifests/profiles/*.yaml `components`). */
export const PROFILES: Readonly<Record<string, { readonly base: boolean; readonly pilot: boolean; readonly gateways: readonly string[] }>> =
  {
    default: { base: true, pilot: true, gateways: [INGRESS] },
    demo: { base: true, pilot: true, gateways: [INGRESS, EGRESS] },
    minimal: { base: true, pilot: true, gateways: [] },
    remote: { base: true, pilot: true, gateways: [] },
    empty: { base: false, pilot: false, gateways: [] },
  };

type Route = { kind: 'all' } | { kind: 'chart'; chart: ChartName } | { kind: 'gateway'; gateway: string };

function routeOf(top: string, path: readonly string[]): Route {
  if (top === 'profile' || top === 'revision' || top === 'global') return { kind: 'all' };
  if (top === 'base' || top === 'defaultRevision') return { kind: 'chart', chart: 'base' };
  if (top === 'cni') return { kind: 'chart', chart: 'cni' };
  if (top === 'gateways' && (path[0] === INGRESS || path[0] === EGRESS)) return { kind: 'gateway', gateway: path[0] };
  return { kind: 'chart', chart: 'meshpilot' };
}

function routeKey(r: Route): string {
  return r.kind === 'all' ? 'all' : r.kind === 'chart' ? `chart:${r.chart}` : `gateway:${r.gateway}`;
}

interface Routed {
  docs: Map<string, GoMap[]>;
  sets: Map<string, string[]>;
}

function push<T>(m: Map<string, T[]>, k: string, v: T): void {
  m.set(k, [...(m.get(k) ?? []), v]);
}

/** Splits each -f document by route (gateway subtrees lifted to the gateway chart's top level). */
function routeDocs(docs: readonly GoMap[], into: Routed): void {
  for (const doc of docs) {
    const parts = new Map<string, GoMap>();
    const part = (route: Route): GoMap => {
      const k = routeKey(route);
      const existing = parts.get(k);
      if (existing) return existing;
      const created: GoMap = {};
      parts.set(k, created);
      return created;
    };
    for (const [k, v] of Object.entries(doc)) {
      if (k !== 'gateways' || !isMap(v)) {
        part(routeOf(k, []))[k] = v;
        continue;
      }
      for (const [gk, gv] of Object.entries(v)) {
        const r = routeOf(k, [gk]);
        if (r.kind === 'gateway') Object.assign(part(r), isMap(gv) ? gv : {});
        else {
          const target = part(r);
          target.gateways = { ...(isMap(target.gateways) ? target.gateways : {}), [gk]: gv };
        }
      }
    }
    for (const [k, v] of parts) push(into.docs, k, v);
  }
}

/** Routes one --set expression; one expression must stay within one route (split it otherwise). */
function routeSet(expr: string, into: Routed): void {
  const parsed: GoMap = {};
  userValuesOrThrow([], [expr], parsed);
  const routes = new Set<string>();
  for (const [k, v] of Object.entries(parsed)) {
    if (k === 'gateways' && isMap(v)) for (const gk of Object.keys(v)) routes.add(routeKey(routeOf(k, [gk])));
    else routes.add(routeKey(routeOf(k, [])));
  }
  if (routes.size !== 1) throw new ValuesError(expr, 'sets keys of several components in one --set; give each its own --set');
  const route = [...routes][0] ?? 'chart:meshpilot';
  if (route.startsWith('gateway:')) {
    const prefix = `gateways.${route.slice('gateway:'.length)}.`;
    if (!expr.startsWith(prefix) || expr.slice(prefix.length).includes(`,gateways.`))
      throw new ValuesError(expr, `write gateway values as ${prefix}<key>=<value>, one gateway per --set`);
    push(into.sets, route, expr.slice(prefix.length));
  } else push(into.sets, route, expr);
}

function userValuesOrThrow(docs: readonly GoMap[], sets: readonly string[], into: GoMap): void {
  try {
    Object.assign(into, userValues(docs, sets));
  } catch (err) {
    throw new ValuesError(sets.at(-1) ?? '--set', (err as Error).message);
  }
}

async function readValuesFile(path: string): Promise<GoMap> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ValuesError(path, `cannot read values file: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = decodeYamlLikeGo(text);
  } catch (err) {
    throw new ValuesError(path, (err as Error).message);
  }
  if (doc === null) return {};
  if (!isMap(doc)) throw new ValuesError(path, 'a values file must hold a map');
  return doc;
}

export interface PlanOptions {
  profile?: string;
  sets: readonly string[];
  valuesFiles: readonly string[];
  revision?: string;
  namespace?: string;
}

function enabledFlag(v: unknown): boolean | undefined {
  return isMap(v) && typeof v.enabled === 'boolean' ? v.enabled : undefined;
}

export async function planInstall(opts: PlanOptions): Promise<{ releases: ReleasePlan[]; values: GoMap }> {
  const docs = await Promise.all(opts.valuesFiles.map(readValuesFile));
  const implicit: string[] = [];
  if (opts.profile !== undefined) implicit.push(`profile=${opts.profile}`);
  if (opts.revision !== undefined) implicit.push(`revision=${opts.revision}`);
  // istioctl's --istioNamespace: the charts name it in global.istioNamespace (RBAC, webhooks).
  if (opts.namespace !== undefined && opts.namespace !== ISTIO_SYSTEM_NAMESPACE) implicit.push(`global.istioNamespace=${opts.namespace}`);
  const sets = [...implicit, ...opts.sets];
  const values: GoMap = {};
  userValuesOrThrow(docs, sets, values);

  const profile = values.profile ?? 'default';
  if (typeof profile !== 'string' || !Object.hasOwn(PROFILES, profile)) {
    throw new ValuesError('profile', `unknown profile ${JSON.stringify(profile)} (one of ${Object.keys(PROFILES).join(', ')})`);
  }
  const components = PROFILES[profile] as (typeof PROFILES)[string];
  const revision = typeof values.revision === 'string' ? values.revision : '';
  const namespace = opts.namespace ?? ISTIO_SYSTEM_NAMESPACE;

  const routed: Routed = { docs: new Map(), sets: new Map() };
  routeDocs(docs, routed);
  for (const s of sets) routeSet(s, routed);

  const gatewayValues = isMap(values.gateways) ? values.gateways : {};
  /**
   * `defaults`: istioctl's settings for this release, a values document before the user's files (so
   * their files and --set win); `derived`: --set that follow from the user's values.
   */
  const release = (
    chart: ChartName,
    name: string,
    route: string,
    more: { defaults?: GoMap; derived?: readonly string[]; keyPrefix?: string } = {},
  ): ReleasePlan => ({
    chart,
    release: name,
    namespace,
    valuesDocs: [...(more.defaults ? [more.defaults] : []), ...(routed.docs.get('all') ?? []), ...(routed.docs.get(route) ?? [])],
    // Keys shared by all charts, then this chart's (they touch different top-level keys, so the
    // order between the two groups does not matter).
    sets: [...(routed.sets.get('all') ?? []), ...(routed.sets.get(route) ?? []), ...(more.derived ?? [])],
    keyPrefix: more.keyPrefix ?? '',
  });

  const releases: ReleasePlan[] = [];
  const cniEnabled = enabledFlag(values.cni) === true;
  if (components.base) releases.push(release('base', 'istio-base', 'chart:base'));
  if (components.pilot)
    releases.push(
      release('meshpilot', revision === '' ? 'istiod' : `istiod-${revision}`, 'chart:meshpilot', {
        derived: cniEnabled ? ['pilot.cni.enabled=true'] : [],
      }),
    );
  if (cniEnabled) releases.push(release('cni', 'istio-cni', 'chart:cni'));
  for (const gw of [INGRESS, EGRESS]) {
    const on = enabledFlag(gatewayValues[gw]) ?? components.gateways.includes(gw);
    if (!on) continue;
    // istioctl's egress gateway is cluster-internal (unless the user says otherwise).
    releases.push(
      release('gateway', gw, `gateway:${gw}`, {
        ...(gw === EGRESS ? { defaults: { service: { type: 'ClusterIP' } } } : {}),
        keyPrefix: `gateways.${gw}.`,
      }),
    );
  }
  return { releases, values };
}
