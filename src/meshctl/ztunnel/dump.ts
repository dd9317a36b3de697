/**
 * ztunnel's admin /config_dump as istioctl reads it (istioctl/pkg/writer/ztunnel/configdump): the
 * `workloads`, `services`, `policies` and `certificates` sections (each a list, or a map whose
 * values are taken, as older ztunnels wrote them) and `workloadState` (connections).
 *
 * istioctl decodes the dump into Go structs and prints `-o json|yaml` by encoding those structs
 * again, so its output has the structs' fields in their order, drops what they lack, writes a
 * missing list as null and a missing string as "". The `*Json` functions below build the same
 * shapes (GoStruct keeps field order; plain objects are Go maps, sorted) for
 * template's marshalJson/marshalYaml, which encode as encoding/json and sigs.k8s.io/yaml do.
 */
import { MeshError } from '../../util/errors.js';

/** A Go struct for marshalJson: own fields in declaration order (a plain object would be a sorted map). */
class GoStruct {
  [field: string]: unknown;
}

type Json = unknown;
type JsonObject = Record<string, Json>;

export interface ZtunnelWorkload {
  readonly raw: JsonObject;
  readonly uid: string;
  readonly workloadIps: readonly string[];
  readonly waypointDestination?: string;
  readonly protocol: string;
  readonly name: string;
  readonly namespace: string;
  readonly node: string;
  readonly status: string;
  readonly hostname: string;
}

export interface ZtunnelService {
  readonly raw: JsonObject;
  readonly name: string;
  readonly namespace: string;
  readonly hostname: string;
  readonly vips: readonly string[];
  readonly waypointDestination?: string;
  /** The endpoints' workload UIDs (a map in the dump: its size is the endpoint count). */
  readonly endpointWorkloads: readonly string[];
}

export interface ZtunnelPolicy {
  readonly raw: JsonObject;
  readonly name: string;
  readonly namespace: string;
  readonly scope: string;
  readonly action: string;
}

export interface ZtunnelCert {
  readonly pem: string;
  readonly serialNumber: string;
  readonly validFrom: string;
  readonly expirationTime: string;
}

export interface ZtunnelCertificate {
  readonly identity: string;
  readonly state: string;
  readonly certChain: readonly ZtunnelCert[];
  readonly rootCerts: readonly ZtunnelCert[];
  /** Whether the dump had the lists (istioctl prints null for a missing one). */
  readonly hasCertChain: boolean;
  readonly hasRootCerts: boolean;
}

export interface ZtunnelConnection {
  readonly src: string;
  readonly originalDst: string;
  readonly actualDst: string;
  readonly protocol: string;
}

export interface ZtunnelWorkloadState {
  readonly raw: JsonObject;
  readonly name: string;
  readonly namespace: string;
  readonly inbound: readonly ZtunnelConnection[];
  readonly outbound: readonly ZtunnelConnection[];
}

export interface ZtunnelDump {
  /** The text as it came (`all -o json` prints it unchanged, as istioctl). */
  readonly text: string;
  readonly parsed: JsonObject;
  readonly workloads: readonly ZtunnelWorkload[];
  readonly services: readonly ZtunnelService[];
  readonly policies: readonly ZtunnelPolicy[];
  /** undefined when the dump has no certificates section (istioctl prints null). */
  readonly certificates?: readonly ZtunnelCertificate[];
  readonly workloadStates: readonly ZtunnelWorkloadState[];
}

/** A config_dump that does not decode, naming the field (as `certificates[0].identity`). */
export class ZtunnelDumpError extends MeshError {
  constructor(where: string, message: string) {
    super('INVALID_ARGUMENT', `error unmarshalling config dump response from ztunnel: ${where}: ${message}`);
    this.name = 'ZtunnelDumpError';
  }
}

const isObject = (v: Json): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function str(o: JsonObject, key: string, at: string): string {
  const v = o[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new ZtunnelDumpError(`${at}.${key}`, `want a string, got ${JSON.stringify(v)}`);
  return v;
}

function strList(o: JsonObject, key: string, at: string): string[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((e) => typeof e !== 'string'))
    throw new ZtunnelDumpError(`${at}.${key}`, `want a list of strings, got ${JSON.stringify(v)}`);
  return v as string[];
}

function obj(v: Json, at: string): JsonObject {
  if (!isObject(v)) throw new ZtunnelDumpError(at, `want an object, got ${JSON.stringify(v)}`);
  return v;
}

/** A section that is a list, or a map whose values are the items (istioctl's unmarshalListOrMap). */
function listOrMap(v: Json, at: string): { item: Json; at: string }[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v.map((item, i) => ({ item, at: `${at}[${i}]` }));
  if (isObject(v)) return Object.entries(v).map(([k, item]) => ({ item, at: `${at}[${JSON.stringify(k)}]` }));
  throw new ZtunnelDumpError(at, `want a list or a map, got ${JSON.stringify(v)}`);
}

function destination(o: JsonObject, key: string, at: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  return str(obj(v, `${at}.${key}`), 'destination', `${at}.${key}`);
}

function workload(v: Json, at: string): ZtunnelWorkload {
  const o = obj(v, at);
  const wp = destination(o, 'waypoint', at);
  return {
    raw: o,
    uid: str(o, 'uid', at),
    workloadIps: strList(o, 'workloadIps', at),
    ...(wp !== undefined ? { waypointDestination: wp } : {}),
    protocol: str(o, 'protocol', at),
    name: str(o, 'name', at),
    namespace: str(o, 'namespace', at),
    node: str(o, 'node', at),
    status: str(o, 'status', at),
    hostname: str(o, 'hostname', at),
  };
}

function service(v: Json, at: string): ZtunnelService {
  const o = obj(v, at);
  const wp = destination(o, 'waypoint', at);
  const eps = o.endpoints === undefined || o.endpoints === null ? {} : obj(o.endpoints, `${at}.endpoints`);
  return {
    raw: o,
    name: str(o, 'name', at),
    namespace: str(o, 'namespace', at),
    hostname: str(o, 'hostname', at),
    vips: strList(o, 'vips', at),
    ...(wp !== undefined ? { waypointDestination: wp } : {}),
    endpointWorkloads: Object.entries(eps).map(([k, e]) =>
      e === null ? '' : str(obj(e, `${at}.endpoints[${JSON.stringify(k)}]`), 'workloadUid', `${at}.endpoints[${JSON.stringify(k)}]`),
    ),
  };
}

function policy(v: Json, at: string): ZtunnelPolicy {
  const o = obj(v, at);
  return { raw: o, name: str(o, 'name', at), namespace: str(o, 'namespace', at), scope: str(o, 'scope', at), action: str(o, 'action', at) };
}

function certs(o: JsonObject, key: string, at: string): ZtunnelCert[] {
  return listOrMap(o[key], `${at}.${key}`).map(({ item, at: a }) => {
    const c = obj(item, a);
    return {
      pem: str(c, 'pem', a),
      serialNumber: str(c, 'serialNumber', a),
      validFrom: str(c, 'validFrom', a),
      expirationTime: str(c, 'expirationTime', a),
    };
  });
}

function certificate(v: Json, at: string): ZtunnelCertificate {
  const o = obj(v, at);
  return {
    identity: str(o, 'identity', at),
    state: str(o, 'state', at),
    certChain: certs(o, 'certChain', at),
    rootCerts: certs(o, 'rootCerts', at),
    hasCertChain: Array.isArray(o.certChain),
    hasRootCerts: Array.isArray(o.rootCerts),
  };
}

function connections(v: Json, at: string): ZtunnelConnection[] {
  return listOrMap(v, at).map(({ item, at: a }) => {
    const c = obj(item, a);
    return {
      src: str(c, 'src', a),
      originalDst: str(c, 'originalDst', a),
      actualDst: str(c, 'actualDst', a),
      protocol: str(c, 'protocol', a),
    };
  });
}

function workloadState(v: Json, at: string): ZtunnelWorkloadState {
  const o = obj(v, at);
  const info = o.info === undefined || o.info === null ? {} : obj(o.info, `${at}.info`);
  const conns = o.connections === undefined || o.connections === null ? {} : obj(o.connections, `${at}.connections`);
  return {
    raw: o,
    name: str(info, 'name', `${at}.info`),
    namespace: str(info, 'namespace', `${at}.info`),
    inbound: connections(conns.inbound, `${at}.connections.inbound`),
    outbound: connections(conns.outbound, `${at}.connections.outbound`),
  };
}

/** Go's json field matching is case-insensitive (istioctl's tag is `workloadstate`, ztunnel writes `workloadState`). */
function field(o: JsonObject, name: string): Json {
  const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : o[key];
}

/** Decodes a config_dump; `source` names it in errors (a file, or the admin address). */
export function parseZtunnelDump(text: string, source: string): ZtunnelDump {
  let parsed: Json;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `error unmarshalling config dump response from ztunnel (${source}): ${(err as Error).message}`);
  }
  const root = obj(parsed, source);
  const certsSection = field(root, 'certificates');
  const states = field(root, 'workloadState');
  return {
    text,
    parsed: root,
    workloads: listOrMap(field(root, 'workloads'), 'workloads').map(({ item, at }) => workload(item, at)),
    services: listOrMap(field(root, 'services'), 'services').map(({ item, at }) => service(item, at)),
    policies: listOrMap(field(root, 'policies'), 'policies').map(({ item, at }) => policy(item, at)),
    ...(certsSection === undefined || certsSection === null
      ? {}
      : { certificates: listOrMap(certsSection, 'certificates').map(({ item, at }) => certificate(item, at)) }),
    workloadStates:
      states === undefined || states === null
        ? []
        : Object.entries(obj(states, 'workloadState')).map(([k, s]) => workloadState(s, `workloadState[${JSON.stringify(k)}]`)),
  };
}

// --- The shapes istioctl re-encodes (istioctl/pkg/writer/ztunnel/configdump/api.go) ---

/** Builds a GoStruct from [field, value] pairs; an undefined value is left out (omitempty). */
function struct(fields: readonly (readonly [string, unknown])[]): GoStruct {
  const s = new GoStruct();
  for (const [k, v] of fields) if (v !== undefined) s[k] = v;
  return s;
}

const s = (o: JsonObject, k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '');
/** A Go string with omitempty. */
const sOmit = (o: JsonObject, k: string): string | undefined => (s(o, k) === '' ? undefined : s(o, k));
/** A Go slice: null when missing, left out when empty and `omit`. */
function list<T>(o: JsonObject, k: string, f: (v: Json) => T, omit = false): T[] | null | undefined {
  const v = o[k];
  if (!Array.isArray(v)) return omit ? undefined : null;
  if (omit && v.length === 0) return undefined;
  return v.map(f);
}
const asStr = (v: Json): string => (typeof v === 'string' ? v : '');
/** A Go integer field (bigint, so it encodes as an integer). */
const int = (v: Json): bigint => (typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : 0n);
const sub = (o: JsonObject, k: string): JsonObject => (isObject(o[k]) ? (o[k] as JsonObject) : {});
/** A Go map: null when missing; a plain object (marshalJson sorts its keys as Go does). */
function map<T>(o: JsonObject, k: string, f: (v: Json) => T): Record<string, T> | null {
  const v = o[k];
  if (!isObject(v)) return null;
  return Object.fromEntries(Object.entries(v).map(([key, e]) => [key, f(e)]));
}

const gatewayAddress = (o: JsonObject, k: string): GoStruct | undefined =>
  isObject(o[k]) ? struct([['destination', s(o[k] as JsonObject, 'destination')]]) : undefined;

export function workloadJson(w: ZtunnelWorkload): GoStruct {
  const o = w.raw;
  const loc = sub(o, 'locality');
  const tunnel = sub(o, 'applicationTunnel');
  return struct([
    ['uid', s(o, 'uid')],
    ['workloadIps', list(o, 'workloadIps', asStr)],
    ['waypoint', gatewayAddress(o, 'waypoint')],
    ['networkGateway', gatewayAddress(o, 'networkGateway')],
    ...[
      'protocol',
      'name',
      'namespace',
      'serviceAccount',
      'workloadName',
      'workloadType',
      'canonicalName',
      'canonicalRevision',
      'clusterId',
    ].map((k) => [k, s(o, k)] as const),
    ['trustDomain', sOmit(o, 'trustDomain')],
    // omitempty does not leave out a struct: locality and applicationTunnel are always there.
    [
      'locality',
      struct([
        ['region', sOmit(loc, 'region')],
        ['zone', sOmit(loc, 'zone')],
        ['subzone', sOmit(loc, 'subzone')],
      ]),
    ],
    ['node', s(o, 'node')],
    ['network', sOmit(o, 'network')],
    ['status', s(o, 'status')],
    ['hostname', s(o, 'hostname')],
    ['capacity', int(o.capacity)],
    [
      'applicationTunnel',
      struct([
        ['protocol', s(tunnel, 'protocol')],
        ['port', tunnel.port === undefined || tunnel.port === null ? undefined : int(tunnel.port)],
      ]),
    ],
    ['authorizationPolicies', list(o, 'authorizationPolicies', asStr, true)],
  ]);
}

/** A cidrVip is written as "network/cidr" (CIDRVIP.MarshalJSON); it may come as that string or as an object. */
function cidrVip(v: Json): string {
  if (typeof v === 'string') return v;
  const o = isObject(v) ? v : {};
  return `${s(o, 'network')}/${s(o, 'cidr')}`;
}

export function serviceJson(svc: ZtunnelService): GoStruct {
  const o = svc.raw;
  const lb = isObject(o.loadBalancer)
    ? struct([
        ['mode', s(o.loadBalancer, 'mode')],
        ['routingPreferences', list(o.loadBalancer, 'routingPreferences', asStr)],
        ['healthPolicy', s(o.loadBalancer, 'healthPolicy')],
      ])
    : undefined;
  return struct([
    ['name', s(o, 'name')],
    ['namespace', s(o, 'namespace')],
    ['hostname', s(o, 'hostname')],
    ['vips', list(o, 'vips', asStr)],
    ['cidrVips', list(o, 'cidrVips', cidrVip, true)],
    ['ports', map(o, 'ports', int)],
    ['loadBalancer', lb],
    ['waypoint', gatewayAddress(o, 'waypoint')],
    [
      'endpoints',
      map(o, 'endpoints', (e) =>
        isObject(e)
          ? struct([
              ['workloadUid', s(e, 'workloadUid')],
              ['service', s(e, 'service')],
              ['address', sOmit(e, 'address')],
              ['port', map(e, 'port', int)],
            ])
          : null,
      ),
    ],
    ['subjectAltNames', list(o, 'subjectAltNames', asStr, true)],
    ['ipFamilies', s(o, 'ipFamilies')],
    ['canonical', o.canonical === true ? true : undefined],
    ['visibility', sOmit(o, 'visibility')],
  ]);
}

function stringMatch(v: Json): GoStruct | null {
  if (!isObject(v)) return null;
  return struct([
    ['Exact', sOmit(v, 'Exact')],
    ['Suffix', sOmit(v, 'Suffix')],
    ['Prefix', sOmit(v, 'Prefix')],
    ['Presence', v.Presence ?? undefined],
  ]);
}

const serviceAccountMatch = (v: Json): GoStruct =>
  struct([
    ['namespace', s(isObject(v) ? v : {}, 'namespace')],
    ['serviceAccount', s(isObject(v) ? v : {}, 'serviceAccount')],
  ]);

function policyMatch(v: Json): GoStruct | null {
  if (!isObject(v)) return null;
  return struct([
    ...['namespaces', 'notNamespaces', 'principals', 'notPrincipals'].map((k) => [k, list(v, k, stringMatch, true)] as const),
    ...['sourceIps', 'notSourceIps', 'destinationIps', 'notDestinationIps'].map((k) => [k, list(v, k, asStr, true)] as const),
    ...['destinationPorts', 'notDestinationPorts'].map((k) => [k, list(v, k, int, true)] as const),
    ...['serviceAccounts', 'notServiceAccounts'].map((k) => [k, list(v, k, serviceAccountMatch, true)] as const),
  ]);
}

const nested =
  <T>(f: (v: Json) => T) =>
  (v: Json): T[] | null =>
    Array.isArray(v) ? v.map(f) : null;

export function policyJson(p: ZtunnelPolicy): GoStruct {
  const o = p.raw;
  return struct([
    ['name', s(o, 'name')],
    ['namespace', s(o, 'namespace')],
    ['scope', s(o, 'scope')],
    ['action', s(o, 'action')],
    ['rules', list(o, 'rules', nested(nested(policyMatch)))],
  ]);
}

const certJson = (c: ZtunnelCert): GoStruct =>
  struct([
    ['pem', c.pem],
    ['serialNumber', c.serialNumber],
    ['validFrom', c.validFrom],
    ['expirationTime', c.expirationTime],
  ]);

export function certificateJson(c: ZtunnelCertificate): GoStruct {
  return struct([
    ['identity', c.identity],
    ['state', c.state],
    ['certChain', c.hasCertChain ? c.certChain.map(certJson) : null],
    ['rootCerts', c.hasRootCerts ? c.rootCerts.map(certJson) : null],
  ]);
}

function connectionJson(c: ZtunnelConnection): GoStruct {
  return struct([
    ['src', c.src],
    ['originalDst', c.originalDst],
    ['actualDst', c.actualDst],
    ['protocol', c.protocol],
  ]);
}

export function workloadStateJson(w: ZtunnelWorkloadState): GoStruct {
  const info = sub(w.raw, 'info');
  const conns = sub(w.raw, 'connections');
  return struct([
    ['state', sOmit(w.raw, 'state')],
    [
      'connections',
      struct([
        ['inbound', Array.isArray(conns.inbound) ? w.inbound.map(connectionJson) : null],
        ['outbound', Array.isArray(conns.outbound) ? w.outbound.map(connectionJson) : null],
      ]),
    ],
    ['info', struct(['name', 'namespace', 'trustDomain', 'serviceAccount'].map((k) => [k, s(info, k)] as const))],
  ]);
}
