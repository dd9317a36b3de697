/**
 * MeshNetworks (istio/api mesh/v1alpha1/network.proto) as users write it: the `meshNetworks` key of
 * the `istio` ConfigMap, or a `--meshNetworks` file. Each network lists where its endpoints come from
 * (`fromCidr`, `fromRegistry`) and the gateways that reach it from other networks (`address` or
 * `registryServiceName`, and `port`). Checked as istiod's ValidateMeshNetworks does, but every
 * problem names its line and field. Unknown fields are reported back as warnings: istiod's
 * ApplyJSON retries with unknown fields allowed, so they do not make the document invalid.
 */
import { LineCounter, parseDocument, type Document } from 'yaml';
import { errorMessage, MeshError } from '../../util/errors.js';
import { checkYamlLimits, DEFAULT_PARSE_LIMITS, fileTooLargeMessage, lineOfOffset } from '../parse-limits.js';
import { lineOfPath } from '../field-line.js';
import { checkFQDN, checkIPSubnet, checkPort, isDns1123Label, isIPAddress } from '../validation/common.js';

/** Where a network's endpoints come from: one of the two is set. */
export interface MeshNetworkEndpoints {
  readonly fromCidr?: string;
  readonly fromRegistry?: string;
}

/** A gateway into a network: an address (IP, or a host name to resolve) or a registry service, and its port. */
export interface MeshNetworkGateway {
  readonly address?: string;
  readonly registryServiceName?: string;
  readonly port: number;
  readonly locality?: string;
}

export interface MeshNetwork {
  readonly endpoints: readonly MeshNetworkEndpoints[];
  readonly gateways: readonly MeshNetworkGateway[];
}

export interface MeshNetworks {
  /** Network id → network. */
  readonly networks: Readonly<Record<string, MeshNetwork>>;
}

/** What a parse found: the networks, and the fields it ignored (`line N: path: unknown field`). */
export interface MeshNetworksFile {
  readonly meshNetworks: MeshNetworks;
  readonly warnings: readonly string[];
}

/** istiod's default: no networks (every endpoint reachable directly). */
export const EMPTY_MESH_NETWORKS: MeshNetworks = Object.freeze({ networks: Object.freeze({}) });

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** proto3 JSON accepts the lowerCamel and the original snake_case field names. */
const FIELD_NAMES: Readonly<Record<string, string>> = {
  from_cidr: 'fromCidr',
  from_registry: 'fromRegistry',
  registry_service_name: 'registryServiceName',
};
const canonical = (k: string): string => FIELD_NAMES[k] ?? k;

class Reader {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  constructor(
    private readonly doc: Document,
    private readonly lines: LineCounter,
  ) {}

  at(path: string): string {
    const line = lineOfPath(this.doc.contents, path, (o) => this.lines.linePos(o).line);
    return line === undefined ? path : `line ${line}: ${path}`;
  }

  error(path: string, message: string): void {
    this.errors.push(`${this.at(path)}: ${message}`);
  }

  /** The fields of a mapping by their lowerCamel names; unknown ones become warnings. */
  fields(path: string, v: unknown, known: readonly string[]): Map<string, unknown> | undefined {
    if (!isRecord(v)) {
      this.error(path, 'must be a mapping');
      return undefined;
    }
    const out = new Map<string, unknown>();
    for (const [k, value] of Object.entries(v)) {
      const name = canonical(k);
      if (!known.includes(name)) this.warnings.push(`${this.at(`${path}.${k}`)}: unknown field, ignored (known: ${known.join(', ')})`);
      else if (value !== null) out.set(name, value);
    }
    return out;
  }

  string(path: string, v: unknown): string | undefined {
    if (v === undefined) return undefined;
    if (typeof v !== 'string') {
      this.error(path, 'must be a string');
      return undefined;
    }
    return v;
  }

  list(path: string, v: unknown): unknown[] {
    if (v === undefined) return [];
    if (!Array.isArray(v)) {
      this.error(path, 'must be a list');
      return [];
    }
    return v;
  }
}

function readEndpoint(r: Reader, path: string, v: unknown): MeshNetworkEndpoints | undefined {
  const f = r.fields(path, v, ['fromCidr', 'fromRegistry']);
  if (!f) return undefined;
  const fromCidr = r.string(`${path}.fromCidr`, f.get('fromCidr'));
  const fromRegistry = r.string(`${path}.fromRegistry`, f.get('fromRegistry'));
  if (fromCidr !== undefined && fromRegistry !== undefined) r.error(path, 'set one of fromCidr and fromRegistry, not both');
  if (fromCidr !== undefined) {
    const problem = checkIPSubnet(fromCidr);
    if (problem) r.error(`${path}.fromCidr`, problem);
  }
  if (fromRegistry !== undefined && !isDns1123Label(fromRegistry))
    r.error(`${path}.fromRegistry`, `invalid registry name: ${fromRegistry}`);
  return { ...(fromCidr !== undefined ? { fromCidr } : {}), ...(fromRegistry !== undefined ? { fromRegistry } : {}) };
}

function readGateway(r: Reader, path: string, v: unknown): MeshNetworkGateway | undefined {
  const f = r.fields(path, v, ['address', 'registryServiceName', 'port', 'locality']);
  if (!f) return undefined;
  const address = r.string(`${path}.address`, f.get('address'));
  const registryServiceName = r.string(`${path}.registryServiceName`, f.get('registryServiceName'));
  const locality = r.string(`${path}.locality`, f.get('locality'));
  if (address !== undefined && registryServiceName !== undefined) r.error(path, 'set one of address and registryServiceName, not both');
  if (registryServiceName !== undefined) {
    const problem = checkFQDN(registryServiceName);
    if (problem) r.error(`${path}.registryServiceName`, problem);
  }
  // istiod (RESOLVE_HOSTNAME_GATEWAYS, on by default) takes a DNS name as well as an IP.
  if (address !== undefined && !isIPAddress(address) && checkFQDN(address) !== undefined)
    r.error(`${path}.address`, `${address} is not a valid IP address or DNS name`);
  const rawPort = f.get('port');
  const port = typeof rawPort === 'string' && /^\d+$/.test(rawPort) ? Number(rawPort) : rawPort;
  if (typeof port !== 'number') r.error(`${path}.port`, rawPort === undefined ? 'port is required' : 'must be a number');
  else {
    const problem = checkPort(port);
    if (problem) r.error(`${path}.port`, problem);
  }
  return {
    ...(address !== undefined ? { address } : {}),
    ...(registryServiceName !== undefined ? { registryServiceName } : {}),
    port: typeof port === 'number' ? port : 0,
    ...(locality !== undefined ? { locality } : {}),
  };
}

/**
 * Parses and checks one MeshNetworks document. `origin` names where it came from in errors
 * (`--meshNetworks /etc/istio/config/meshNetworks`, `ConfigMap istio-system/istio key meshNetworks`).
 * An empty document is istiod's default: no networks.
 */
export function parseMeshNetworks(text: string, origin: string): MeshNetworksFile {
  // Read as untrusted as a config file: the same size, depth and alias limits, checked before parsing.
  const size = Buffer.byteLength(text, 'utf8');
  if (size > DEFAULT_PARSE_LIMITS.maxFileBytes)
    throw new MeshError('INVALID_ARGUMENT', `${origin}: ${fileTooLargeMessage(size, DEFAULT_PARSE_LIMITS)}`);
  const violation = checkYamlLimits(text, DEFAULT_PARSE_LIMITS);
  if (violation) throw new MeshError('INVALID_ARGUMENT', `${origin}: line ${lineOfOffset(text, violation.offset)}: ${violation.message}`);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new MeshError('INVALID_ARGUMENT', `${origin}: line ${e.linePos?.[0]?.line ?? '?'}: not YAML: ${e.message.split('\n')[0]}`);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: DEFAULT_PARSE_LIMITS.maxAliasCount }) ?? {};
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${origin}: not YAML: ${errorMessage(err)}`);
  }
  const r = new Reader(doc, lines);
  const networks: Record<string, MeshNetwork> = {};
  const top = r.fields('', value, ['networks']);
  const raw = top?.get('networks');
  if (raw !== undefined && !isRecord(raw)) r.error('networks', 'must be a mapping of network name to network');
  for (const [name, n] of Object.entries(isRecord(raw) ? raw : {})) {
    const path = `networks[${name}]`;
    if (n === null) {
      networks[name] = { endpoints: [], gateways: [] };
      continue;
    }
    const f = r.fields(path, n, ['endpoints', 'gateways']);
    if (!f) continue;
    const endpoints = r
      .list(`${path}.endpoints`, f.get('endpoints'))
      .map((e, i) => readEndpoint(r, `${path}.endpoints[${i}]`, e))
      .filter((e) => e !== undefined);
    const gateways = r
      .list(`${path}.gateways`, f.get('gateways'))
      .map((g, i) => readGateway(r, `${path}.gateways[${i}]`, g))
      .filter((g) => g !== undefined);
    networks[name] = { endpoints, gateways };
  }
  if (r.errors.length > 0) throw new MeshError('INVALID_ARGUMENT', `${origin}: ${r.errors.join('; ')}`);
  return { meshNetworks: { networks }, warnings: r.warnings.map((w) => `${origin}: ${w}`) };
}
