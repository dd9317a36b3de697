/**
 * The functions istiod adds to its injection templates (pkg/kube/inject/template.go
 * InjectionFuncmap), over Sprig. Same names, arguments and results, so that Istio's templates
 * (and users' own) render as under istiod. `toYaml`, `indent`, `contains` and `toLower` replace
 * Sprig's, as in istiod: note `indent` leaves the first line alone, and `contains` is
 * `contains needle haystack`.
 */
import { toJson } from '@bufbuild/protobuf';
import { marshalYaml, type TemplateFunc } from '../template/index.js';
import { ProxyConfigSchema } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { GO_JSON, GoEnum, GoStruct, GoWrapper, ProtoStruct, goJson } from './go-view.js';
import { cleanProxyConfig } from './mesh.js';
import type { ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { formatGoDuration } from '../util/duration.js';
import { PROXY_CONTAINER } from '../config/constants.js';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof GoStruct) && !(v instanceof ProtoStruct);
}

/** Go's %v of a float64 (strconv 'g', shortest): exponent form below 1e-4 and from 1e21. */
function goFloat(v: number): string {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const [mantissa = '', expText = '0'] = v.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 21) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(v);
}

/** fmt.Sprint of one template value. */
export function goSprint(v: unknown): string {
  if (v === undefined || v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goFloat(v);
  if (typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v instanceof GoEnum) return v.String();
  if (v instanceof GoWrapper) return goSprint(v.Value);
  if (Array.isArray(v)) return `[${v.map(goSprint).join(' ')}]`;
  if (isRecord(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goSprint(v[k])}`)
      .join(' ')}]`;
  return String(v);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : goSprint(v);
}

function stringMap(v: unknown): Record<string, string> {
  if (v instanceof GoStruct || v === null || v === undefined || !isRecord(v)) return {};
  const out: Record<string, string> = {};
  for (const [k, e] of Object.entries(v)) out[k] = str(e);
  return out;
}

function annotationsOf(meta: unknown): Record<string, unknown> {
  const a = meta instanceof GoStruct ? (meta as unknown as { Annotations?: unknown }).Annotations : undefined;
  return isRecord(a) ? a : {};
}

function splitPorts(s: string): string[] {
  return s.split(',');
}

/** excludeInboundPort: adds the agent's status port to the excluded inbound ports unless it is there or 0. */
export function excludeInboundPort(port: unknown, excluded: unknown): string {
  const portStr = goSprint(port).trim();
  const list = str(excluded ?? '');
  if (portStr.length === 0 || portStr === '0') return list;
  const out: string[] = [];
  for (const p of splitPorts(list)) {
    if (p === portStr) return list;
    const t = p.trim();
    if (t.length > 0) out.push(t);
  }
  out.push(portStr);
  return out.join(',');
}

function containerPorts(containers: unknown, include: (name: string) => boolean): string {
  const parts: string[] = [];
  for (const c of Array.isArray(containers) ? containers : []) {
    const fields = c as { Name?: unknown; Ports?: unknown };
    if (!include(str(fields.Name ?? ''))) continue;
    for (const p of Array.isArray(fields.Ports) ? fields.Ports : []) {
      const port = p as { Protocol?: unknown; ContainerPort?: unknown };
      if (port.Protocol === 'UDP' || port.Protocol === 'SCTP') continue;
      parts.push(goSprint(port.ContainerPort ?? 0));
    }
  }
  return parts.join(',');
}

/** sigs.k8s.io/yaml.Marshal of a template value; struct views marshal as their JSON. */
function toYaml(v: unknown): string {
  return marshalYaml(plainValue(v));
}

/** A template value as plain JSON-like data (what encoding/json would produce, then decode). */
function plainValue(v: unknown): unknown {
  if (v instanceof GoStruct) return v[GO_JSON];
  if (v instanceof GoEnum) return v.number;
  if (v instanceof GoWrapper) return v.Value;
  if (Array.isArray(v)) return v.map(plainValue);
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, plainValue(e)]));
  return v;
}

/** Go's time.Duration.String() of a google.protobuf.Duration view. */
export function formatDuration(d: unknown): string {
  const msg = d instanceof ProtoStruct ? (d[GO_JSON] as unknown as { seconds?: bigint; nanos?: number }) : undefined;
  const total = (msg?.seconds ?? 0n) * 1_000_000_000n + BigInt(msg?.nanos ?? 0);
  return formatGoDuration(total);
}

/** appendMultusNetwork: adds istio-cni's network to `k8s.v1.cni.cncf.io/networks` (list or JSON form). */
export function appendMultusNetwork(existing: unknown, network: unknown): string {
  const value = str(existing ?? '');
  const net = str(network ?? '');
  if (value === '') return net;
  const close = value.lastIndexOf(']');
  if (close !== -1) {
    let networks: unknown;
    try {
      networks = JSON.parse(value);
    } catch {
      return value; // istiod leaves a value it cannot read alone
    }
    const slash = net.indexOf('/');
    const [ns, name] = slash === -1 ? ['', net] : [net.slice(0, slash), net.slice(slash + 1)];
    for (const n of Array.isArray(networks) ? networks : []) {
      if (isRecord(n) && n.name === name && (n.namespace ?? '') === ns) return value;
    }
    const entry = ns === '' ? `, {"name": "${name}"}` : `, {"name": "${name}", "namespace": "${ns}"}`;
    return value.slice(0, close) + entry + value.slice(close);
  }
  if (value.split(',').some((n) => n.trim() === net)) return value;
  return `${value}, ${net}`;
}

function omitNil(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) {
    const out = v.map(omitNil).filter((e) => e !== null);
    return out.length === 0 && v.length > 0 ? null : out;
  }
  if (isRecord(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries(v)) {
      const f = omitNil(e);
      if (f !== null) out[k] = f;
    }
    return Object.keys(out).length === 0 && Object.keys(v).length > 0 ? null : out;
  }
  return v;
}

function imageTagDigest(image: string): { tag: string; digest: string } {
  let rest = image;
  let digest = '';
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
  }
  const slash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  return { tag: colon > slash ? rest.slice(colon + 1) : '', digest };
}

/** OTEL_RESOURCE_ATTRIBUTES when an OpenTelemetry provider asks for the semantic conventions. */
export function otelResourceAttributes(
  mesh: unknown,
  annotations: unknown,
  labels: unknown,
  namespace: unknown,
  containers: unknown,
): string {
  const mc =
    mesh instanceof ProtoStruct
      ? (mesh[GO_JSON] as unknown as {
          extensionProviders?: { provider?: { case?: string; value?: { serviceAttributeEnrichment?: number } } }[];
        })
      : undefined;
  // MeshConfig.ExtensionProvider.OTEL_SEMANTIC_CONVENTIONS is 1.
  const semconv = (mc?.extensionProviders ?? []).some(
    (p) => p.provider?.case === 'opentelemetry' && p.provider.value?.serviceAttributeEnrichment === 1,
  );
  if (!semconv) return '';
  const a = stringMap(annotations);
  const l = stringMap(labels);
  const ns = str(namespace ?? '');
  const list = Array.isArray(containers) ? (containers as { Name?: unknown; Image?: unknown }[]) : [];
  const attrs: string[] = [];
  if (a['resource.opentelemetry.io/service.namespace']) attrs.push(`service.namespace=${a['resource.opentelemetry.io/service.namespace']}`);
  else if (ns !== '') attrs.push(`service.namespace=${ns}`);
  if (a['resource.opentelemetry.io/service.version']) attrs.push(`service.version=${a['resource.opentelemetry.io/service.version']}`);
  else if (l['app.kubernetes.io/version']) attrs.push(`service.version=${l['app.kubernetes.io/version']}`);
  else if (list.length === 1) {
    const { tag, digest } = imageTagDigest(str(list[0]?.Image ?? ''));
    if (tag !== '' && digest !== '') attrs.push(`service.version=${tag}@${digest}`);
    else if (digest !== '') attrs.push(`service.version=${digest}`);
    else if (tag !== '') attrs.push(`service.version=${tag}`);
  }
  if (a['resource.opentelemetry.io/service.instance.id'])
    attrs.push(`service.instance.id=${a['resource.opentelemetry.io/service.instance.id']}`);
  else if (list.length > 0) attrs.push(`service.instance.id=${ns}.$(POD_NAME).${str(list[0]?.Name ?? '')}`);
  return attrs.join(',');
}

export interface InjectionFuncsOptions {
  /** istiod's own environment, which the `env` function reads (meshpilot's process env, passed in). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** istiod's InjectionFuncmap. */
export function injectionFuncs(opts: InjectionFuncsOptions): Record<string, TemplateFunc> {
  const mergeMaps = (...maps: unknown[]): Record<string, string> | null =>
    maps.length === 0 ? null : Object.assign({}, ...maps.map(stringMap));
  return {
    formatDuration: (d) => formatDuration(d),
    isset: (m, key) => (m instanceof GoStruct || !isRecord(m) ? false : Object.hasOwn(m, str(key))),
    excludeInboundPort: (port, excluded) => excludeInboundPort(port, excluded),
    includeInboundPorts: (containers) => containerPorts(containers, () => true),
    applicationPorts: (containers) => containerPorts(containers, (name) => name !== PROXY_CONTAINER),
    kubevirtInterfaces: (s) => str(s ?? ''),
    excludeInterfaces: (s) => str(s ?? ''),
    annotation: (meta, name, def) => {
      const a = annotationsOf(meta);
      const key = str(name);
      return Object.hasOwn(a, key) ? str(a[key]) : goSprint(def);
    },
    valueOrDefault: (value, def) => (value === '' || value === null || value === undefined ? def : value),
    toJSON: (m) => (m === null || m === undefined ? '{}' : goJson(stringMap(m))),
    fromJSON: (j) => {
      try {
        return JSON.parse(str(j)) as unknown;
      } catch {
        return '{}'; // istiod returns the string "{}" and logs
      }
    },
    structToJSON: (v) => (v === null || v === undefined ? '{}' : goJson(v)),
    protoToJSON: (v) => {
      if (!(v instanceof ProtoStruct)) return '{}';
      const msg = v[GO_JSON] as unknown as { $typeName?: string };
      if (msg.$typeName !== 'istio.mesh.v1alpha1.ProxyConfig') return goJson(plainValue(v));
      // jsonpb writes map entries in key order; protobuf-es in insertion order.
      const cleaned = cleanProxyConfig(msg as ProxyConfig);
      for (const field of ProxyConfigSchema.fields) {
        if (field.fieldKind !== 'map') continue;
        const map = (cleaned as unknown as Record<string, Record<string, unknown>>)[field.localName] ?? {};
        (cleaned as unknown as Record<string, unknown>)[field.localName] = Object.fromEntries(
          Object.keys(map)
            .sort()
            .map((k) => [k, map[k]]),
        );
      }
      return JSON.stringify(toJson(ProxyConfigSchema, cleaned));
    },
    toYaml: (v) => toYaml(v),
    indent: (spaces, source) => {
      const pad = ' '.repeat(Number(spaces ?? 0));
      return str(source ?? '')
        .split('\n')
        .map((line, i) => (i > 0 ? pad + line : line))
        .join('\n');
    },
    directory: (p) => {
      const s = str(p ?? '');
      return s.slice(0, s.lastIndexOf('/') + 1);
    },
    contains: (needle, haystack) => str(haystack ?? '').includes(str(needle ?? '')),
    toLower: (s) => str(s ?? '').toLowerCase(),
    appendMultusNetwork: (existing, network) => appendMultusNetwork(existing, network),
    env: (key, def) => {
      const v = opts.env[str(key)];
      return v === undefined || v === '' ? def : v;
    },
    omit: (dict, ...keys) => {
      const drop = new Set(keys.map(str));
      return Object.fromEntries(Object.entries(stringMap(dict)).filter(([k]) => !drop.has(k)));
    },
    strdict: (...v) => {
      const out: Record<string, string> = {};
      for (let i = 0; i < v.length; i += 2) out[str(v[i])] = i + 1 < v.length ? str(v[i + 1]) : '';
      return out;
    },
    toJsonMap: (...maps) => goJson(mergeMaps(...maps)),
    mergeMaps: (...maps) => mergeMaps(...maps),
    omitNil: (v) => omitNil(v),
    otelResourceAttributes: (mesh, annotations, labels, namespace, containers) =>
      otelResourceAttributes(mesh, annotations, labels, namespace, containers),
  };
}
