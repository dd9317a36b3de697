/**
 * Turns one parsed document into a validated Config: kind and apiVersion, metadata, the spec
 * through its protobuf-es schema, then istiod's semantic checks for the kind. Never throws;
 * returns every problem found, each with the field path.
 */
import { createHash } from 'node:crypto';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { ok, fail, type Result } from '../../util/result.js';
import type { Config, ConfigError, ConfigKey, ConfigOrigin, ConfigStatus, IstioCondition } from '../config.js';
import {
  apiKindOf,
  KIND_NAMES,
  KINDS,
  kindForApiKind,
  lookupKind,
  splitApiVersion,
  type KindInfo,
  type KindName,
  type SpecByKind,
} from '../kinds.js';
import { crdSpecValidator } from '../gateway-api/validate.js';
import { DEFAULT_PARSE_LIMITS, jsonDepthExceeds } from '../parse-limits.js';
import { checkLabels, isK8sLabel, isK8sSubdomain } from './common.js';
import type { ObjectContext } from './context.js';
import { validateDestinationRule } from './destination-rule.js';
import { validateEnvoyFilter } from './envoy-filter.js';
import { validateGateway } from './gateway.js';
import { field, index, type Issue, Issues, key } from './issues.js';
import { decodeSpec } from './schema.js';
import { validateAuthorizationPolicy, validatePeerAuthentication, validateRequestAuthentication } from './security.js';
import { validateSecret } from './secret.js';
import { validateServiceEntry } from './service-entry.js';
import { validateSidecar } from './sidecar.js';
import { validateTelemetry } from './telemetry.js';
import { validateVirtualService } from './virtual-service.js';
import { validateProxyConfig } from './proxy-config.js';
import { validateWasmPlugin } from './wasm-plugin.js';
import { validateWorkloadEntry } from './workload-entry.js';
import { validateWorkloadGroup } from './workload-group.js';

/** A Kubernetes-style object as read from a file or handed to a memory source: not trusted yet. */
export interface RawObject {
  readonly apiVersion?: unknown;
  readonly kind?: unknown;
  /** `{name, namespace, labels, annotations}`; other metadata fields are ignored. */
  readonly metadata?: unknown;
  readonly spec?: unknown;
  /** Read for WorkloadEntries only (`status.conditions`); ignored for other kinds. */
  readonly status?: unknown;
}

export interface ValidateOptions {
  /** Namespace for objects that name none (default `default`, as kubectl). */
  readonly defaultNamespace?: string;
}

export const DEFAULT_NAMESPACE = 'default';

type KindValidator<K extends KindName> = (spec: SpecByKind[K], ctx: ObjectContext, issues: Issues) => void;

const SEMANTIC: { readonly [K in KindName]: KindValidator<K> } = {
  VirtualService: validateVirtualService,
  DestinationRule: validateDestinationRule,
  ServiceEntry: validateServiceEntry,
  WorkloadEntry: validateWorkloadEntry,
  WorkloadGroup: validateWorkloadGroup,
  Gateway: validateGateway,
  Sidecar: validateSidecar,
  EnvoyFilter: validateEnvoyFilter,
  PeerAuthentication: validatePeerAuthentication,
  RequestAuthentication: validateRequestAuthentication,
  AuthorizationPolicy: validateAuthorizationPolicy,
  Telemetry: validateTelemetry,
  WasmPlugin: validateWasmPlugin,
  ProxyConfig: validateProxyConfig,
  Secret: validateSecret,
  GatewayClass: crdSpecValidator('GatewayClass'),
  KubernetesGateway: crdSpecValidator('Gateway'),
  HTTPRoute: crdSpecValidator('HTTPRoute'),
  GRPCRoute: crdSpecValidator('GRPCRoute'),
  TCPRoute: crdSpecValidator('TCPRoute'),
  TLSRoute: crdSpecValidator('TLSRoute'),
  ReferenceGrant: crdSpecValidator('ReferenceGrant'),
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The kind/namespace/name of a document when they can be read, valid or not (to keep its last good version). */
export function readKey(doc: RawObject, opts: ValidateOptions = {}): ConfigKey | undefined {
  const info =
    typeof doc.kind === 'string'
      ? kindForApiKind(doc.kind, typeof doc.apiVersion === 'string' ? splitApiVersion(doc.apiVersion).group : undefined)
      : undefined;
  if (!info || !isRecord(doc.metadata)) return undefined;
  const { name, namespace } = doc.metadata;
  if (typeof name !== 'string' || name === '') return undefined;
  const ns = typeof namespace === 'string' && namespace !== '' ? namespace : (opts.defaultNamespace ?? DEFAULT_NAMESPACE);
  return { kind: info.kind, namespace: ns, name };
}

export function validateObject(doc: RawObject, origin: ConfigOrigin, opts: ValidateOptions = {}): Result<Config, ConfigError> {
  return validateObjectWithWarnings(doc, origin, opts).result;
}

/** What validateObjectWithWarnings found: the verdict, and istiod's warnings beside it. */
export interface Validated {
  readonly result: Result<Config, ConfigError>;
  /**
   * istiod's validation warnings (deprecated fields, settings without effect), found whether the
   * object is valid or not. They never reject: an object with only warnings is `ok` and served.
   */
  readonly warnings: readonly ConfigError[];
}

/** validateObject, with the warnings istiod's webhook would return beside its verdict (`meshctl analyze` reports them). */
export function validateObjectWithWarnings(doc: RawObject, origin: ConfigOrigin, opts: ValidateOptions = {}): Validated {
  const issues = new Issues();
  const kindName = typeof doc.kind === 'string' ? doc.kind : undefined;
  const info = checkKind(doc, kindName, issues);
  const meta = readMetadata(doc.metadata, opts.defaultNamespace ?? DEFAULT_NAMESPACE, issues);

  let spec: SpecByKind[KindName] | undefined;
  // Objects from the API server or memory never went through the file parser's depth limit, and
  // every step below recurses per level (10,000 levels overflowed the stack: the fuzzer found it).
  const tooDeep = jsonDepthExceeds(doc.spec, MAX_SPEC_DEPTH);
  if (tooDeep) issues.add('spec', `nesting deeper than ${MAX_SPEC_DEPTH} levels`);
  if (info && !tooDeep) {
    const raw = withoutUndefined(doc.spec ?? {}, 'spec', issues);
    if (!isRecord(raw)) issues.add('spec', 'spec must be an object');
    else {
      const decoded = decodeSpec<SpecByKind[KindName]>(info.schema, raw, 'spec', issues);
      spec = decoded.value;
      // Semantic checks need a decoded spec; metadata problems do not stop them.
      const checkable = decoded.value ?? decoded.lenient;
      if (checkable) (SEMANTIC[info.kind] as KindValidator<KindName>)(checkable, meta.ctx, issues);
    }
  }

  const base: { origin: ConfigOrigin; kind?: string; namespace?: string; name?: string } = { origin };
  if (kindName !== undefined) base.kind = kindName;
  if (meta.nameReadable) {
    base.namespace = meta.ctx.namespace;
    base.name = meta.ctx.name;
  }
  const errorOf = (i: Issue): ConfigError => ({ ...base, path: i.path, message: i.message });
  // A warning about the object as a whole has no field: it points at the object.
  const warnings = issues.warnings.map((i) => (i.path === '' ? { ...base, message: i.message } : errorOf(i)));
  if (issues.count > 0 || !info || spec === undefined) return { result: fail(...issues.list.map(errorOf)), warnings };
  return { result: ok(buildConfig(info, meta.ctx, spec, doc, origin)), warnings };
}

function buildConfig(info: KindInfo, ctx: ObjectContext, spec: SpecByKind[KindName], doc: RawObject, origin: ConfigOrigin): Config {
  const status = info.kind === 'WorkloadEntry' ? readConditions(doc.status) : undefined;
  const config: Config = {
    meta: Object.freeze({
      kind: info.kind,
      name: ctx.name,
      namespace: ctx.namespace,
      labels: Object.freeze({ ...ctx.labels }),
      annotations: Object.freeze({ ...ctx.annotations }),
      resourceVersion: resourceVersion(info, ctx, spec, status),
      ...creationTimestamp(doc.metadata),
      ...(isRecord(doc.metadata) && typeof doc.metadata.uid === 'string' && doc.metadata.uid !== '' ? { uid: doc.metadata.uid } : {}),
      origin,
    }),
    spec,
    ...(status ? { status } : {}),
  };
  return Object.freeze(config);
}

const CONDITION_FIELDS = ['lastProbeTime', 'lastTransitionTime', 'reason', 'message'] as const;

/**
 * `status.conditions` as controllers write them (meshpilot's own health updates, istiod's): read
 * leniently, since status is not user input — an entry without a string type and status is skipped.
 */
function readConditions(status: unknown): ConfigStatus | undefined {
  if (!isRecord(status) || !Array.isArray(status.conditions)) return undefined;
  const conditions: IstioCondition[] = [];
  for (const c of status.conditions as unknown[]) {
    if (!isRecord(c) || typeof c.type !== 'string' || typeof c.status !== 'string') continue;
    const out: Record<string, string> = { type: c.type, status: c.status };
    for (const f of CONDITION_FIELDS) if (typeof c[f] === 'string') out[f] = c[f];
    conditions.push(Object.freeze(out) as unknown as IstioCondition);
  }
  return conditions.length > 0 ? Object.freeze({ conditions: Object.freeze(conditions) }) : undefined;
}

/**
 * The object as far as it can be read when validateObject rejected it: a known kind and version,
 * a name, and a spec that decodes once unknown fields are dropped. Semantic and metadata problems
 * are ignored. For `meshctl analyze` only, which reports the validation errors and still hands the
 * object to the analyzers (as istioctl does); the server never serves such an object.
 */
export function salvageObject(doc: RawObject, origin: ConfigOrigin, opts: ValidateOptions = {}): Config | undefined {
  const ignored = new Issues();
  const kindName = typeof doc.kind === 'string' ? doc.kind : undefined;
  const info = checkKind(doc, kindName, ignored);
  const meta = readMetadata(doc.metadata, opts.defaultNamespace ?? DEFAULT_NAMESPACE, ignored);
  if (!info || !meta.nameReadable || jsonDepthExceeds(doc.spec, MAX_SPEC_DEPTH)) return undefined;
  const raw = withoutUndefined(doc.spec ?? {}, 'spec', ignored);
  if (!isRecord(raw)) return undefined;
  const decoded = decodeSpec<SpecByKind[KindName]>(info.schema, raw, 'spec', ignored);
  const spec = decoded.value ?? decoded.lenient;
  return spec === undefined ? undefined : buildConfig(info, meta.ctx, spec, doc, origin);
}

/** istiod orders some kinds (EnvoyFilter) by creation time: kept when the object carries a valid one. */
function creationTimestamp(metadata: unknown): { creationTimestamp?: number } {
  const t = isRecord(metadata) ? metadata.creationTimestamp : undefined;
  const ms = typeof t === 'string' ? Date.parse(t) : Number.NaN;
  return Number.isFinite(ms) ? { creationTimestamp: ms } : {};
}

function checkKind(doc: RawObject, kindName: string | undefined, issues: Issues): KindInfo | undefined {
  if (kindName === undefined) {
    issues.add('kind', 'kind is required');
    return undefined;
  }
  const group = typeof doc.apiVersion === 'string' ? splitApiVersion(doc.apiVersion).group : undefined;
  const info = kindForApiKind(kindName, group);
  if (!info) {
    issues.add(
      'kind',
      `kind ${kindName} is not served by meshpilot (supported: ${[...new Set(KIND_NAMES.map((k) => apiKindOf(KINDS[k])))].join(', ')})`,
    );
    return undefined;
  }
  const apiVersion = doc.apiVersion;
  if (typeof apiVersion !== 'string' || apiVersion === '') {
    issues.add('apiVersion', 'apiVersion is required');
    return undefined;
  }
  if (!lookupKind(apiVersion, kindName)) {
    const supported = KIND_NAMES.map((k): KindInfo => KINDS[k])
      .filter((i) => apiKindOf(i) === kindName)
      .flatMap((i) => i.versions.map((v) => (i.group === '' ? v : `${i.group}/${v}`)))
      .join(', ');
    issues.add('apiVersion', `apiVersion ${apiVersion} is not supported for ${kindName} (supported: ${supported})`);
    return undefined;
  }
  return info;
}

interface MetaResult {
  readonly ctx: ObjectContext;
  /** Name (and so namespace) could be read, so errors can name the object. */
  readonly nameReadable: boolean;
}

function readMetadata(metadata: unknown, defaultNamespace: string, issues: Issues): MetaResult {
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  let name = '';
  let namespace = defaultNamespace;
  let nameReadable = false;
  if (metadata === undefined || metadata === null) {
    issues.add('metadata.name', 'metadata.name is required');
    return { ctx: { name, namespace, labels, annotations }, nameReadable };
  }
  if (!isRecord(metadata)) {
    issues.add('metadata', 'metadata must be an object');
    return { ctx: { name, namespace, labels, annotations }, nameReadable };
  }

  const n = metadata.name;
  if (n === undefined || n === null || n === '') issues.add('metadata.name', 'metadata.name is required');
  else if (typeof n !== 'string') issues.add('metadata.name', 'metadata.name must be a string');
  else {
    name = n;
    nameReadable = true;
    if (!isK8sSubdomain(n)) {
      issues.add(
        'metadata.name',
        `invalid name "${n}": must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)`,
      );
    }
  }

  const ns = metadata.namespace;
  if (typeof ns === 'string' && ns !== '') {
    namespace = ns;
    if (!isK8sLabel(ns))
      issues.add(
        'metadata.namespace',
        `invalid namespace "${ns}": must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63 characters)`,
      );
  } else if (ns !== undefined && ns !== null && ns !== '') {
    issues.add('metadata.namespace', 'metadata.namespace must be a string');
  }

  readStringMap(metadata.labels, 'metadata.labels', labels, issues);
  checkLabels(issues, 'metadata.labels', labels);
  readStringMap(metadata.annotations, 'metadata.annotations', annotations, issues);
  return { ctx: { name, namespace, labels, annotations }, nameReadable };
}

/** The depth the file parser allows (istio objects need about 15). */
const MAX_SPEC_DEPTH = DEFAULT_PARSE_LIMITS.maxDepth;

/**
 * A `__proto__` key cannot be held by a plain object (assigning it sets the prototype), so
 * protobuf-es and our copies would drop it without a word: an unknown field accepted, a subset's
 * label selector emptied. It is reported instead.
 */
const PROTO_KEY = '__proto__';
const protoKeyMessage = `key "${PROTO_KEY}" is not allowed`;

/**
 * Objects built in code may carry `key: undefined`, which JSON (and protobuf-es) cannot take;
 * `__proto__` keys are reported and left out.
 */
function withoutUndefined(v: unknown, path: string, issues: Issues): unknown {
  if (Array.isArray(v)) return v.map((x, i) => withoutUndefined(x, index(path, i), issues));
  if (!isRecord(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === PROTO_KEY) issues.add(field(path, k), protoKeyMessage);
    else if (x !== undefined) out[k] = withoutUndefined(x, field(path, k), issues);
  }
  return out;
}

function readStringMap(value: unknown, path: string, out: Record<string, string>, issues: Issues): void {
  if (value === undefined || value === null) return;
  if (!isRecord(value)) {
    issues.add(path, `${path} must be a map of strings`);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === PROTO_KEY) issues.add(key(path, k), protoKeyMessage);
    else if (typeof v === 'string') out[k] = v;
    // YAML reads `version: 1` or `enabled: true` as a number/boolean; Kubernetes rejects those too.
    else issues.add(`${path}[${k}]`, `value must be a string, got ${v === null ? 'null' : typeof v} (quote it in YAML)`);
  }
}

/**
 * A stable content hash: the same object written differently (key order, `"50"` vs `50`, an
 * apiVersion alias, a moved line) hashes the same, so the store raises no event for it.
 */
function resourceVersion(info: KindInfo, ctx: ObjectContext, spec: SpecByKind[KindName], status: ConfigStatus | undefined): string {
  const specJson = toJson(info.schema, spec as never);
  // The probe time moves on every health report; what a push depends on is the type, status and message.
  const conditions = status?.conditions.map((c) => ({ type: c.type, status: c.status, message: c.message ?? '' }));
  const canonical = canonicalJson({
    kind: info.kind,
    namespace: ctx.namespace,
    name: ctx.name,
    labels: ctx.labels,
    annotations: ctx.annotations,
    spec: specJson,
    ...(conditions ? { conditions } : {}),
  });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

function canonicalJson(v: JsonValue | Readonly<Record<string, JsonValue>>): string {
  if (Array.isArray(v)) return `[${v.map((x) => canonicalJson(x)).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, JsonValue>)[k] ?? null)}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(v);
}
