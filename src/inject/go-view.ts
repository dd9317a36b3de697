/**
 * The injection template sees Go structs (istiod's SidecarTemplateData holds corev1 and
 * meshconfig types), so `.ObjectMeta.Annotations`, `.Spec.Containers`, `$c.Ports`,
 * `.ProxyConfig.InterceptionMode.String` and `.ProxyConfig.HoldApplicationUntilProxyStarts.GetValue`
 * must resolve as in Go. The template engine treats class instances as structs (fields are own
 * properties, methods are prototype functions) and plain objects as maps; this module builds such
 * views from Kubernetes JSON and from protobuf-es messages.
 */
import { goStringMap } from '../template/index.js';
import { ScalarType, type DescEnum, type DescField, type DescMessage, type Message } from '@bufbuild/protobuf';

/** The JSON a struct view came from, for structToJSON / toJSON (Go marshals by json tags). */
export const GO_JSON = Symbol('goJson');

/** A Go struct value: exported fields are own enumerable properties. */
export class GoStruct {
  declare readonly [GO_JSON]: unknown;
  constructor(json: unknown, fields: Record<string, unknown>) {
    Object.defineProperty(this, GO_JSON, { value: json, enumerable: false });
    Object.assign(this, fields);
  }
}

/** A proto enum value: prints as its name (Go's Stringer), `.String` is the name. */
export class GoEnum {
  constructor(
    readonly name: string,
    readonly number: number,
  ) {}
  String(): string {
    return this.name;
  }
}

/** A google.protobuf wrapper (BoolValue, UInt32Value, …); absent ones answer GetValue with the zero value. */
export class GoWrapper {
  constructor(readonly Value: unknown) {}
  GetValue(): unknown {
    return this.Value;
  }
}

// ---------------------------------------------------------------------------------------------
// Kubernetes objects

/** JSON names whose Go field names are not just the name with its first letter upper-cased. */
const K8S_GO_NAMES: Readonly<Record<string, string>> = {
  apiVersion: 'APIVersion',
  uid: 'UID',
  hostIP: 'HostIP',
  hostIPs: 'HostIPs',
  podIP: 'PodIP',
  podIPs: 'PodIPs',
  ip: 'IP',
  hostPID: 'HostPID',
  hostIPC: 'HostIPC',
  dnsPolicy: 'DNSPolicy',
  dnsConfig: 'DNSConfig',
  tty: 'TTY',
  httpGet: 'HTTPGet',
  httpHeaders: 'HTTPHeaders',
  tcpSocket: 'TCPSocket',
  grpc: 'GRPC',
  fsGroup: 'FSGroup',
  fsGroupChangePolicy: 'FSGroupChangePolicy',
  seLinuxOptions: 'SELinuxOptions',
  seLinuxChangePolicy: 'SELinuxChangePolicy',
  nfs: 'NFS',
  iscsi: 'ISCSI',
  rbd: 'RBD',
  csi: 'CSI',
  fc: 'FC',
  awsElasticBlockStore: 'AWSElasticBlockStore',
  gcePersistentDisk: 'GCEPersistentDisk',
  cephfs: 'CephFS',
  targetWWNs: 'TargetWWNs',
  wwids: 'WWIDs',
};

/** JSON members that are Go maps (map[string]string, ResourceList), not structs. */
const K8S_MAPS = new Set([
  'labels',
  'annotations',
  'nodeSelector',
  'limits',
  'requests',
  'matchLabels',
  'volumeAttributes',
  'options',
  'overhead',
  'allocatedResources',
]);

/**
 * Zero values of the fields Istio's templates read, by the JSON member that holds the struct.
 * Go structs always have every field; a JSON document omits empty ones.
 */
const K8S_ZERO_FIELDS: Readonly<Record<string, () => Record<string, unknown>>> = {
  metadata: () => ({
    Name: '',
    GenerateName: '',
    Namespace: '',
    Labels: goStringMap({}),
    Annotations: goStringMap({}),
    OwnerReferences: [],
  }),
  spec: () => ({
    Containers: [],
    InitContainers: [],
    Volumes: [],
    ImagePullSecrets: [],
    ServiceAccountName: '',
    NodeName: '',
    HostNetwork: false,
    DNSPolicy: '',
    SecurityContext: null,
  }),
  container: () => ({
    Name: '',
    Image: '',
    Ports: [],
    Args: [],
    Command: [],
    Env: [],
    VolumeMounts: [],
    SecurityContext: null,
    Lifecycle: null,
    ReadinessProbe: null,
    LivenessProbe: null,
    StartupProbe: null,
  }),
  port: () => ({ Name: '', HostPort: 0, ContainerPort: 0, Protocol: '', HostIP: '' }),
};

/** Go's field order of ContainerPort, which structToJSON prints (`ISTIO_META_POD_PORTS`). */
const JSON_FIELD_ORDER: Readonly<Record<string, readonly string[]>> = {
  port: ['name', 'hostPort', 'containerPort', 'protocol', 'hostIP'],
};

function goFieldName(jsonName: string): string {
  return K8S_GO_NAMES[jsonName] ?? jsonName.charAt(0).toUpperCase() + jsonName.slice(1);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Which zero-field table applies to a struct reached through `member` (list members name their element). */
function structRole(member: string | undefined): string | undefined {
  switch (member) {
    case 'metadata':
      return 'metadata';
    case 'spec':
      return 'spec';
    case 'containers':
    case 'initContainers':
      return 'container';
    case 'ports':
      return 'port';
    default:
      return undefined;
  }
}

function orderedJson(json: Record<string, unknown>, role: string | undefined): Record<string, unknown> {
  const order = role === undefined ? undefined : JSON_FIELD_ORDER[role];
  if (order === undefined) return json;
  const out: Record<string, unknown> = {};
  for (const k of order) if (json[k] !== undefined) out[k] = json[k];
  for (const [k, v] of Object.entries(json)) if (!(k in out)) out[k] = v;
  return out;
}

/**
 * A Go view of a Kubernetes JSON value reached through the member named `member`: objects become
 * structs with Go field names (zero-filled for the fields templates use), map members stay maps.
 */
export function k8sView(json: unknown, member?: string): unknown {
  if (Array.isArray(json)) return json.map((e) => k8sView(e, member));
  if (!isRecord(json)) return json;
  if (member !== undefined && K8S_MAPS.has(member)) {
    const copy = { ...json };
    // map[string]string: a missing key reads as "" in Go, not as no value.
    return Object.values(copy).every((v) => typeof v === 'string') ? goStringMap(copy as Record<string, string>) : copy;
  }
  const role = structRole(member);
  const fields: Record<string, unknown> = role === undefined ? {} : (K8S_ZERO_FIELDS[role]?.() ?? {});
  for (const [k, v] of Object.entries(json)) fields[goFieldName(k)] = k8sView(v, k);
  return new GoStruct(orderedJson(json, role), fields);
}

/** metav1.TypeMeta and types.NamespacedName as structs. */
export function typeMetaView(apiVersion: string, kind: string): GoStruct {
  return new GoStruct({ ...(apiVersion ? { apiVersion } : {}), ...(kind ? { kind } : {}) }, { APIVersion: apiVersion, Kind: kind });
}

export function namespacedNameView(name: string, namespace: string): GoStruct {
  return new GoStruct({ Namespace: namespace, Name: name }, { Namespace: namespace, Name: name });
}

// ---------------------------------------------------------------------------------------------
// Protobuf messages (meshconfig.ProxyConfig, MeshConfig)

/** protoc-gen-go's GoCamelCase of a proto field name (google.golang.org/protobuf/internal/strs). */
export function goCamelCase(s: string): string {
  const lower = (c: string | undefined): boolean => c !== undefined && c >= 'a' && c <= 'z';
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (c === '.' && lower(s[i + 1])) continue;
    if (c === '.') out += '_';
    else if (c === '_' && (i === 0 || s[i - 1] === '.')) out += 'X';
    else if (c === '_' && lower(s[i + 1])) continue;
    else if (c >= '0' && c <= '9') out += c;
    else {
      out += lower(c) ? c.toUpperCase() : c;
      while (lower(s[i + 1])) out += s.charAt(++i);
    }
  }
  return out;
}

const WRAPPERS = new Set([
  'google.protobuf.BoolValue',
  'google.protobuf.StringValue',
  'google.protobuf.BytesValue',
  'google.protobuf.Int32Value',
  'google.protobuf.UInt32Value',
  'google.protobuf.Int64Value',
  'google.protobuf.UInt64Value',
  'google.protobuf.FloatValue',
  'google.protobuf.DoubleValue',
]);

const INTEGER_SCALARS: ReadonlySet<ScalarType> = new Set([
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
  ScalarType.INT64,
  ScalarType.UINT64,
  ScalarType.SINT64,
  ScalarType.FIXED64,
  ScalarType.SFIXED64,
]);

function wrapperZero(typeName: string): unknown {
  if (typeName === 'google.protobuf.BoolValue') return false;
  if (typeName === 'google.protobuf.StringValue') return '';
  if (typeName.endsWith('64Value')) return 0n;
  return 0;
}

function enumView(desc: DescEnum, n: number): GoEnum {
  return new GoEnum(desc.values.find((v) => v.number === n)?.name ?? String(n), n);
}

/** Go's integer fields are ints in templates (bigint in the engine); floats stay float64. */
function scalarView(field: DescField & { fieldKind: 'scalar' }, v: unknown): unknown {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string' && INTEGER_SCALARS.has(field.scalar)) return BigInt(v);
  if (typeof v === 'number' && INTEGER_SCALARS.has(field.scalar)) return BigInt(v);
  return v;
}

function singularView(field: DescField, v: unknown): unknown {
  switch (field.fieldKind) {
    case 'scalar':
      return scalarView(field, v);
    case 'enum':
      return enumView(field.enum, typeof v === 'number' ? v : 0);
    case 'message':
      if (WRAPPERS.has(field.message.typeName)) return new GoWrapper(v === undefined ? wrapperZero(field.message.typeName) : v);
      return v === undefined ? null : protoView(field.message, v as Message);
    default:
      return v;
  }
}

function fieldView(field: DescField, v: unknown): unknown {
  if (field.fieldKind === 'list') {
    const items = (v as unknown[] | undefined) ?? [];
    if (field.listKind === 'enum') return items.map((e) => enumView(field.enum, e as number));
    if (field.listKind === 'message') return items.map((e) => protoView(field.message, e as Message));
    return [...items];
  }
  if (field.fieldKind === 'map') {
    const out: Record<string, unknown> = {};
    for (const [k, e] of Object.entries((v as Record<string, unknown> | undefined) ?? {})) {
      if (field.mapKind === 'message') out[k] = protoView(field.message, e as Message);
      else if (field.mapKind === 'enum') out[k] = enumView(field.enum, e as number);
      else out[k] = e;
    }
    return field.mapKind === 'scalar' && field.scalar === ScalarType.STRING ? goStringMap(out as Record<string, string>) : out;
  }
  return singularView(field, v);
}

/** A struct whose exported fields are the message's Go fields, with GetX() getters as Go generates. */
export class ProtoStruct {
  declare readonly [GO_JSON]: Message;
  constructor(message: Message) {
    Object.defineProperty(this, GO_JSON, { value: message, enumerable: false });
  }
}

/**
 * A Go view of a protobuf-es message. Oneof members appear as Go's getters only (`GetServiceCluster`),
 * as in Go where the oneof field holds an interface.
 */
export function protoView(desc: DescMessage, message: Message): ProtoStruct {
  const view = new ProtoStruct(message);
  const record = message as unknown as Record<string, unknown>;
  const getters: Record<string, () => unknown> = {};
  for (const field of desc.fields) {
    const goName = goCamelCase(field.name);
    let raw: unknown;
    if (field.oneof !== undefined) {
      const oneof = record[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
      raw = oneof?.case === field.localName ? oneof.value : undefined;
    } else {
      raw = record[field.localName];
      Object.defineProperty(view, goName, { value: fieldView(field, raw), enumerable: true });
    }
    const value = field.oneof === undefined ? (view as unknown as Record<string, unknown>)[goName] : fieldView(field, raw);
    getters[`Get${goName}`] = () => value;
  }
  // Getters are methods: non-enumerable, so the struct's fields are what toJSON-like code sees.
  for (const [name, fn] of Object.entries(getters)) Object.defineProperty(view, name, { value: fn, enumerable: false });
  return view;
}

// ---------------------------------------------------------------------------------------------
// encoding/json as Go writes it

function goJsonString(s: string): string {
  // Go escapes <, >, & and the JS line separators for HTML safety.
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Go's json.Marshal of a template value: maps with sorted keys, struct views as their JSON. */
export function goJson(v: unknown): string {
  if (v instanceof GoStruct) return goJsonOrdered(v[GO_JSON]);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return goJsonString(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isFinite(v) ? JSON.stringify(v) : 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v instanceof GoEnum) return String(v.number);
  if (v instanceof GoWrapper) return goJson(v.Value);
  if (Array.isArray(v)) return `[${v.map(goJson).join(',')}]`;
  if (isRecord(v)) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${goJsonString(k)}:${goJson(v[k])}`).join(',')}}`;
  }
  return 'null';
}

/** JSON of a struct's source document in its own member order (Go's field order), nested maps sorted. */
function goJsonOrdered(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goJsonOrdered).join(',')}]`;
  if (isRecord(v))
    return `{${Object.entries(v)
      .map(([k, e]) => `${goJsonString(k)}:${goJsonOrdered(e)}`)
      .join(',')}}`;
  return goJson(v);
}
