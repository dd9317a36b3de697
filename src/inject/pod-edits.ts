/**
 * What istiod does to the merged pod after rendering (pkg/kube/inject/webhook.go
 * reapplyOverwrittenContainers and postProcessPod): the user's own istio-proxy / istio-init fields
 * win over the template's, cluster/network env from the webhook path, Prometheus metrics merging,
 * application probe rewriting through the agent, the status annotation, and container order.
 */
import { MeshError } from '../util/errors.js';
import type { JsonValue } from '../util/json-patch.js';
import { strategicMerge } from './strategic-merge.js';
import { INIT_CONTAINER, INTERCEPTION_MODE_ANNOTATION, PROXY_CONTAINER, VALIDATION_CONTAINER } from '../config/constants.js';

type JsonObject = { [key: string]: JsonValue };

export const CORE_DUMP_CONTAINER = 'enable-core-dump';
export const OVERRIDES_ANNOTATION = 'proxy.istio.io/overrides';

function rec(v: JsonValue | undefined): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

function list(v: JsonValue | undefined): JsonObject[] {
  return Array.isArray(v) ? (v.filter((e) => typeof e === 'object' && e !== null && !Array.isArray(e)) as JsonObject[]) : [];
}

/** A mutable working copy: spec lists and maps are owned by the caller. */
export interface WorkPod {
  metadata: JsonObject & { labels: Record<string, string>; annotations: Record<string, string> };
  spec: JsonObject & { containers: JsonObject[]; initContainers: JsonObject[] };
  [key: string]: JsonValue;
}

export function toWorkPod(pod: JsonObject): WorkPod {
  const copy = structuredClone(pod);
  const metadata = rec(copy.metadata);
  const spec = rec(copy.spec);
  return {
    ...copy,
    metadata: {
      ...metadata,
      labels: { ...(rec(metadata.labels) as Record<string, string>) },
      annotations: { ...(rec(metadata.annotations) as Record<string, string>) },
    },
    spec: { ...spec, containers: list(spec.containers), initContainers: list(spec.initContainers) },
  };
}

/** Back to plain JSON: the empty lists and maps istiod would not write are dropped again. */
export function fromWorkPod(pod: WorkPod, original: JsonObject): JsonObject {
  const out = structuredClone(pod) as unknown as JsonObject;
  const metadata = rec(out.metadata);
  const spec = rec(out.spec);
  const origMeta = rec(original.metadata);
  const origSpec = rec(original.spec);
  for (const key of ['labels', 'annotations'] as const)
    if (Object.keys(rec(metadata[key])).length === 0 && origMeta[key] === undefined) delete metadata[key];
  for (const key of ['containers', 'initContainers'] as const)
    if (list(spec[key]).length === 0 && origSpec[key] === undefined) delete spec[key];
  return out;
}

export function findContainer(pod: { spec: JsonObject }, name: string): JsonObject | undefined {
  return list(pod.spec.containers).find((c) => c.name === name) ?? list(pod.spec.initContainers).find((c) => c.name === name);
}

/**
 * istiod's reapplyOverwrittenContainers: a container the template renders that the user also
 * declared (Istio's "customizing injection") gets the user's fields merged back over the
 * template's; image `auto` means the template's image. The user's version is recorded in
 * proxy.istio.io/overrides. Also adjusts istio-init's `-u` to the user's runAsUser.
 */
export function reapplyUserContainers(merged: JsonObject, original: JsonObject, templatePod: JsonObject, tproxy: boolean): JsonObject {
  let pod = merged;
  const overrides: { containers: JsonObject[]; initContainers: JsonObject[] } = { containers: [], initContainers: [] };
  const origSpec = rec(original.spec);
  for (const field of ['containers', 'initContainers'] as const) {
    for (const c of list(rec(templatePod.spec)[field])) {
      const match =
        field === 'containers'
          ? list(origSpec.containers).find((o) => o.name === c.name)
          : findContainer({ spec: origSpec }, String(c.name));
      if (match === undefined) continue;
      const overlay = structuredClone(match);
      if (overlay.image === 'auto') delete overlay.image;
      overrides[field].push(overlay);
      pod = strategicMerge(pod, {
        spec: field === 'containers' ? { containers: [overlay] } : { containers: [], initContainers: [overlay] },
      });
    }
  }
  if (overrides.containers.length > 0 || overrides.initContainers.length > 0) {
    const meta = rec(pod.metadata);
    const value = JSON.stringify({
      ...(overrides.containers.length > 0 ? { containers: overrides.containers } : {}),
      ...(overrides.initContainers.length > 0 ? { initContainers: overrides.initContainers } : {}),
    });
    pod = { ...pod, metadata: { ...meta, annotations: { ...rec(meta.annotations), [OVERRIDES_ANNOTATION]: value } } };
  }
  return adjustInitContainerUser(pod, original, tproxy);
}

function adjustInitContainerUser(pod: JsonObject, original: JsonObject, tproxy: boolean): JsonObject {
  const user = findContainer({ spec: rec(original.spec) }, PROXY_CONTAINER);
  const sc = rec(user?.securityContext);
  if (user === undefined || (sc.runAsUser === undefined && sc.runAsGroup === undefined)) return pod;
  const work = toWorkPod(pod);
  const init =
    work.spec.initContainers.find((c) => c.name === INIT_CONTAINER) ??
    work.spec.initContainers.find((c) => c.name === VALIDATION_CONTAINER);
  if (init === undefined) return pod;
  const modeAnnotation = work.metadata.annotations[INTERCEPTION_MODE_ANNOTATION];
  const isTproxy = tproxy || modeAnnotation === 'TPROXY';
  if (isTproxy && sc.runAsUser !== undefined) {
    const sidecar = findContainer(work, PROXY_CONTAINER);
    if (sidecar !== undefined) sidecar.securityContext = { ...rec(sidecar.securityContext), runAsUser: 0 };
  }
  if (!isTproxy && init.name === VALIDATION_CONTAINER) {
    const isc = { ...rec(init.securityContext) };
    if (sc.runAsUser !== undefined) isc.runAsUser = sc.runAsUser;
    if (sc.runAsGroup !== undefined) isc.runAsGroup = sc.runAsGroup;
    init.securityContext = isc;
  }
  if (sc.runAsUser === undefined || sc.runAsUser === 0) return fromWorkPod(work, pod);
  const args = Array.isArray(init.args) ? [...init.args] : [];
  const u = args.indexOf('-u');
  if (u >= 0 && u + 1 < args.length) {
    args[u + 1] = String(sc.runAsUser);
    init.args = args;
  }
  return fromWorkPod(work, pod);
}

/** ISTIO_META_CLUSTER_ID / ISTIO_META_NETWORK from the webhook path replace the sidecar's env (sorted). */
export function overwriteClusterEnv(pod: WorkPod, proxyEnvs: Readonly<Record<string, string>>): void {
  const sidecar = findContainer(pod, PROXY_CONTAINER);
  if (sidecar === undefined || Object.keys(proxyEnvs).length === 0) return;
  const env = list(sidecar.env).filter((e) => !Object.hasOwn(proxyEnvs, String(e.name)));
  for (const key of Object.keys(proxyEnvs).sort()) env.push({ name: key, value: proxyEnvs[key] ?? '' });
  sidecar.env = env;
}

// ---------------------------------------------------------------------------------------------
// Prometheus metrics merging

/** Prometheus' SanitizeLabelName: `prometheus.io/scrape` and `prometheus_io_scrape` mean the same. */
function sanitize(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}

const PROM_SCRAPE = 'prometheus_io_scrape';
const PROM_PORT = 'prometheus_io_port';
const PROM_PATH = 'prometheus_io_path';
const PROM_TARGETS = 'prometheus_istio_io_scrape_targets';
const CLEARED = new Set([PROM_SCRAPE, PROM_PORT, PROM_PATH, PROM_TARGETS]);

/** Ports the sidecar owns (pilot-agent status.istioReservedPorts): never an app scrape target. */
const RESERVED_PORTS: Readonly<Record<string, string>> = {
  '15000': 'Envoy admin',
  '15001': 'outbound traffic capture',
  '15004': 'pilot debug',
  '15006': 'inbound traffic capture',
  '15008': 'HBONE tunnel',
  '15020': 'pilot-agent status / merged Prometheus',
  '15021': 'Envoy health',
  '15053': 'DNS proxy',
  '15090': 'Envoy Prometheus (already merged)',
};

function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

function checkScrapePort(port: string, statusPort: string, what: string): void {
  const n = /^[+-]?\d+$/.test(port) ? Number(port) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `invalid prometheus scrape ${what}: invalid ${what === 'targets' ? 'target ' : ''}port "${port}"`,
    );
  const canon = String(n);
  if (canon === statusPort)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `invalid prometheus scrape ${what}: ${what === 'targets' ? 'target ' : ''}port ${port} conflicts with agent port`,
    );
  const reason = RESERVED_PORTS[canon];
  if (reason !== undefined)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `invalid prometheus scrape ${what}: ${what === 'targets' ? 'target ' : ''}port ${port} is reserved for Istio (${reason}) and cannot be scraped`,
    );
}

/**
 * istiod's applyPrometheusMerge: the app's prometheus.io annotations move into the sidecar's
 * ISTIO_PROMETHEUS_ANNOTATIONS and the pod is scraped on the agent's merged endpoint instead.
 */
export function applyPrometheusMerge(pod: WorkPod, statusPort: number, meshEnablesMerge: boolean): void {
  const annotations = pod.metadata.annotations;
  let scrape = true;
  for (const [k, v] of Object.entries(annotations)) {
    if (sanitize(k) !== PROM_SCRAPE) continue;
    const b = parseBool(v);
    if (b !== undefined) scrape = b;
  }
  const merge = annotations['prometheus.istio.io/merge-metrics'];
  const enabled = merge !== undefined && parseBool(merge) !== undefined ? parseBool(merge) === true : meshEnablesMerge;
  if (!scrape || !enabled) return;
  const target = String(statusPort);
  const currentPort = Object.entries(annotations).find(([k]) => sanitize(k) === PROM_PORT)?.[1];
  if (currentPort === target) return;
  const cfg: { scrape: string; path: string; port: string; targets?: { port: string; path: string }[] } = {
    scrape: '',
    path: '',
    port: '',
  };
  for (const [k, v] of Object.entries(annotations)) {
    const key = sanitize(k);
    if (key === PROM_PORT) cfg.port = v;
    else if (key === PROM_SCRAPE) cfg.scrape = v;
    else if (key === PROM_PATH) cfg.path = v;
    else if (key === PROM_TARGETS) {
      const targets: { port: string; path: string }[] = [];
      let bad = false;
      for (const entry of v
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== '')) {
        const colon = entry.indexOf(':');
        const port = (colon < 0 ? entry : entry.slice(0, colon)).trim();
        const path = colon < 0 ? '' : entry.slice(colon + 1).trim();
        if (port === '') bad = true;
        targets.push({ port, path: path === '' ? '/metrics' : path });
      }
      if (!bad && targets.length > 0) cfg.targets = targets; // istiod logs and ignores a bad list
    }
  }
  if (cfg.targets !== undefined) {
    cfg.port = cfg.targets[0]?.port ?? '';
    cfg.path = cfg.targets[0]?.path ?? '';
    for (const t of cfg.targets) checkScrapePort(t.port, target, 'targets');
  } else if (cfg.port !== '') {
    checkScrapePort(cfg.port, target, 'configuration');
  }
  const sidecar = findContainer(pod, PROXY_CONTAINER);
  const empty = cfg.scrape === '' && cfg.path === '' && cfg.port === '' && cfg.targets === undefined;
  if (sidecar !== undefined && !empty) {
    const ordered = { scrape: cfg.scrape, path: cfg.path, port: cfg.port, ...(cfg.targets !== undefined ? { targets: cfg.targets } : {}) };
    sidecar.env = [...list(sidecar.env), { name: 'ISTIO_PROMETHEUS_ANNOTATIONS', value: JSON.stringify(ordered) }];
  }
  for (const k of Object.keys(annotations)) if (CLEARED.has(sanitize(k))) delete annotations[k];
  annotations['prometheus.io/port'] = target;
  annotations['prometheus.io/path'] = '/stats/prometheus';
  annotations['prometheus.io/scrape'] = 'true';
}

/** istiod's applySecurePrometheusAnnotation (ENVOY_SECURE_MERGED_METRICS_PORT in the sidecar env). */
export function applySecurePrometheusAnnotation(pod: WorkPod): void {
  if (Object.keys(pod.metadata.annotations).some((k) => sanitize(k) === 'prometheus_istio_io_secure_port')) return;
  const sidecar = findContainer(pod, PROXY_CONTAINER);
  const env = list(sidecar?.env).find((e) => e.name === 'ENVOY_SECURE_MERGED_METRICS_PORT');
  if (typeof env?.value === 'string' && env.value !== '' && env.value !== '0')
    pod.metadata.annotations['prometheus.istio.io/secure-port'] = env.value;
}

// ---------------------------------------------------------------------------------------------
// Order, status

export interface InjectionStatus {
  readonly initContainers: string[] | null;
  readonly containers: string[] | null;
  readonly volumes: string[] | null;
  readonly imagePullSecrets: string[] | null;
  readonly revision: string;
}

/** The `sidecar.istio.io/status` value: what the templates added, as Go marshals it (nil lists are null). */
export function injectionStatus(templatePod: JsonObject, revision: string): string {
  const spec = rec(templatePod.spec);
  const names = (field: string): string[] | null => {
    const l = list(spec[field]).map((e) => String(e.name ?? ''));
    return l.length === 0 ? null : l;
  };
  const status: InjectionStatus = {
    initContainers: names('initContainers'),
    containers: names('containers'),
    volumes: names('volumes'),
    imagePullSecrets: names('imagePullSecrets'),
    revision: revision === '' ? 'default' : revision,
  };
  return JSON.stringify(status);
}

function moveNamed(containers: JsonObject[], name: string, where: 'first' | 'last'): JsonObject[] {
  const match = containers.find((c) => c.name === name);
  if (match === undefined) return containers;
  const rest = containers.filter((c) => c !== match);
  return where === 'first' ? [match, ...rest] : [...rest, match];
}

/** istiod's reorderPod: the proxy last (first when the app waits for it), init containers first. */
export function reorderContainers(pod: WorkPod, holdApplication: boolean): void {
  pod.spec.containers = moveNamed(pod.spec.containers, PROXY_CONTAINER, holdApplication ? 'first' : 'last');
  let init = pod.spec.initContainers;
  if (init.some((c) => c.name === PROXY_CONTAINER)) {
    for (const name of [CORE_DUMP_CONTAINER, PROXY_CONTAINER, VALIDATION_CONTAINER, INIT_CONTAINER]) init = moveNamed(init, name, 'first');
  } else {
    init = moveNamed(init, VALIDATION_CONTAINER, 'first');
    init = moveNamed(init, INIT_CONTAINER, 'last');
    init = moveNamed(init, CORE_DUMP_CONTAINER, 'last');
  }
  pod.spec.initContainers = init;
}
