/**
 * `meshpilot agent` options: flags first, then the environment variables Istio's pilot-agent reads
 * (CA_ADDR, PROV_CERT, OUTPUT_CERTS, SECRET_TTL, ISTIO_META_* …), then pilot-agent's defaults.
 * Parsed once at start-up and passed in; nothing here reads the environment later.
 */
import { parseBoundedYaml } from '../config/index.js';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { parseDurationMs } from '../util/duration.js';
import type { KeyType } from '../security/crypto.js';
import { MeshError } from '../util/errors.js';
import type { LogLevel } from '../util/log.js';
import { parseReadinessProbe, type WorkloadProbe } from './workload-health.js';
import { ENVOY_FLAGS, ENVOY_USAGE, parseEnvoyRunOptions, parsePodAnnotations, type EnvoyRunOptions } from './envoy-options.js';
import { defaultPodIp, nodeMetadataFromEnv } from './node-identity.js';
import { DEFAULT_DOMAIN_SUFFIX, DEFAULT_TRUST_DOMAIN, STATUS_PORT_ANNOTATION } from '../config/constants.js';

export type AgentMode = 'grpc' | 'envoy';
/** How the agent reaches the control plane's ADS: TLS with the workload cert (15012) or plaintext (15010). */
export type XdsTransport = 'tls' | 'plaintext';

export interface AgentOptions {
  readonly mode: AgentMode;
  /** Control-plane ADS address (ProxyConfig discoveryAddress). */
  readonly xdsAddr: string;
  readonly xdsTransport: XdsTransport;
  /** CA that verifies the control plane's ADS serving certificate (XDS_ROOT_CA; default: --caRootCert). */
  readonly xdsRootCertFile: string;
  /** IstioCertificateService address (CA_ADDR; default: --xdsAddr). */
  readonly caAddr: string;
  /** Root certificate the CA's serving certificate must chain to (CA_ROOT_CA). */
  readonly caRootCertFile: string;
  /** Name the control plane's certificates are checked against when dialling an IP (ISTIOD_SAN). */
  readonly istiodSAN: string;
  /** A JWT for the first CSR (and for renewals when the current certificate is refused). */
  readonly tokenFile?: string;
  /** PROV_CERT: a directory with cert-chain.pem + key.pem to authenticate the first CSR with mTLS. */
  readonly provCertDir?: string;
  /** OUTPUT_CERTS: where cert-chain.pem, key.pem and root-cert.pem go (always set in grpc mode). */
  readonly outputDir?: string;
  readonly grpcBootstrapFile: string;
  readonly envoyBootstrapFile: string;
  /** The agent's local ADS proxy socket (Istio: ./etc/istio/proxy/XDS). */
  readonly xdsSocket: string;
  /** The SDS socket Envoy's `sds-grpc` cluster dials. */
  readonly sdsSocket: string;
  /** `waypoint`: an ambient waypoint (its Envoy gets internal listeners; no inbound capture). */
  readonly proxyType: 'sidecar' | 'router' | 'waypoint';
  readonly podName: string;
  readonly namespace: string;
  readonly podIp: string;
  readonly serviceAccount: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly trustDomain: string;
  /** DNS suffix of services (`cluster.local`): the node id ends in `<ns>.svc.<domain>`. */
  readonly domain: string;
  readonly clusterId: string;
  /** Extra node metadata from ISTIO_META_* / ISTIO_METAJSON_* (keys without the prefix). */
  readonly extraMetadata: Readonly<Record<string, unknown>>;
  readonly keyType: KeyType;
  /** SECRET_TTL: the validity requested from the CA. */
  readonly secretTtlMs: number;
  /** SECRET_GRACE_PERIOD_RATIO: renew when this fraction of the lifetime is left (0.5 → at half the TTL). */
  readonly gracePeriodRatio: number;
  /** SECRET_GRACE_PERIOD_RATIO_JITTER: ± this much on the ratio, to stagger a fleet's renewals. */
  readonly gracePeriodJitter: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** file_watcher refresh_interval in the gRPC bootstrap (Istio: 15m). */
  readonly certRefreshIntervalMs: number;
  /** Envoy bootstrap ads_config api_type (Istio's default: DELTA_GRPC). */
  readonly envoyXdsApi: 'GRPC' | 'DELTA_GRPC';
  readonly logLevel: LogLevel;
  /** Envoy mode: where fetched Wasm modules are cached (istio-agent: WASM_CACHE_DIR-like, /var/lib/istio/data). */
  readonly wasmCacheDir: string;
  /** PEM roots for HTTPS Wasm downloads (module servers, registries); default: Node's bundled roots. */
  readonly wasmCaCertFile?: string;
  /** Registries pulled over plain HTTP (istio's WASM_INSECURE_REGISTRIES, comma-separated). */
  readonly wasmInsecureRegistries: readonly string[];
  /** Envoy mode: the Envoy the agent starts and supervises, its status server and drain. */
  readonly envoy: EnvoyRunOptions;
  /** ProxyConfig readinessProbe (a VM's WorkloadGroup probe): run and reported to the control plane as the workload's health. */
  readonly readinessProbe?: WorkloadProbe;
}

const OPTIONS = {
  mode: { type: 'string' },
  xdsAddr: { type: 'string' },
  xdsTransport: { type: 'string' },
  xdsRootCert: { type: 'string' },
  caAddr: { type: 'string' },
  caRootCert: { type: 'string' },
  istiodSAN: { type: 'string' },
  tokenFile: { type: 'string' },
  provCert: { type: 'string' },
  outputDir: { type: 'string' },
  grpcBootstrap: { type: 'string' },
  envoyBootstrap: { type: 'string' },
  xdsSocket: { type: 'string' },
  sdsSocket: { type: 'string' },
  proxyType: { type: 'string' },
  podName: { type: 'string' },
  namespace: { type: 'string' },
  podIp: { type: 'string' },
  serviceAccount: { type: 'string' },
  labels: { type: 'string' },
  trustDomain: { type: 'string' },
  domain: { type: 'string' },
  clusterId: { type: 'string' },
  keyType: { type: 'string' },
  secretTTL: { type: 'string' },
  secretGracePeriodRatio: { type: 'string' },
  secretGracePeriodRatioJitter: { type: 'string' },
  retryInitialInterval: { type: 'string' },
  retryMaxInterval: { type: 'string' },
  certRefreshInterval: { type: 'string' },
  envoyXdsApi: { type: 'string' },
  logLevel: { type: 'string' },
  wasmCacheDir: { type: 'string' },
  wasmCaCert: { type: 'string' },
  podAnnotations: { type: 'string' },
  meshConfig: { type: 'string' },
  ...ENVOY_FLAGS,
} as const;

function ratio(text: string, what: string, min: number, max: number): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
    throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" must be a number in [${min}, ${max}]`);
  }
  return n;
}

function positiveDuration(text: string, what: string): number {
  const ms = parseDurationMs(text, what);
  if (ms <= 0) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" must be more than 0`);
  return ms;
}

function oneOf<T extends string>(text: string, what: string, allowed: readonly T[]): T {
  const hit = allowed.find((a) => a.toLowerCase() === text.toLowerCase());
  if (hit === undefined) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not one of ${allowed.join(', ')}`);
  return hit;
}

/** `app=foo,version=v1` → labels; an empty string → none. */
export function parseLabels(text: string, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new MeshError('INVALID_ARGUMENT', `${what}: "${part}" is not key=value`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/** Port of `host:port` (IPv6 in brackets); undefined when there is none. */
function portOf(addr: string): number | undefined {
  const m = /:(\d+)$/.exec(addr);
  return m ? Number(m[1]) : undefined;
}

/** What the agent reads from PROXY_CONFIG (the pod's effective ProxyConfig as JSON, as injected). */
interface InjectedProxyConfig {
  readonly json?: Record<string, unknown>;
  readonly discoveryAddress?: string;
  readonly proxyMetadata: Readonly<Record<string, string>>;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The mesh config file's `defaultConfig` (pilot-agent's --meshConfig, ./etc/istio/config/mesh: a
 * VM's mesh.yaml from `meshctl x workload entry configure`); none when the file is absent.
 */
function meshFileProxyConfig(file: string): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new MeshError('INVALID_ARGUMENT', `mesh config (--meshConfig) ${file}: ${(err as Error).message}`);
  }
  const mesh = parseBoundedYaml(text, `mesh config (--meshConfig) ${file}`);
  if (mesh === null || mesh === undefined) return undefined;
  if (!isObject(mesh)) throw new MeshError('INVALID_ARGUMENT', `mesh config (--meshConfig) ${file}: not a mapping`);
  const dc = mesh.defaultConfig;
  if (dc === undefined || dc === null) return undefined;
  if (!isObject(dc)) throw new MeshError('INVALID_ARGUMENT', `mesh config (--meshConfig) ${file}: defaultConfig is not a mapping`);
  return dc;
}

/** As pilot-agent: the mesh file's defaultConfig, with PROXY_CONFIG over it (its proxyMetadata entries added). */
function proxyConfigFromEnv(env: NodeJS.ProcessEnv, meshFile: string): InjectedProxyConfig {
  const base = meshFileProxyConfig(meshFile);
  if (!env.PROXY_CONFIG && !base) return { proxyMetadata: {} };
  let pc: unknown = {};
  if (env.PROXY_CONFIG) {
    try {
      pc = JSON.parse(env.PROXY_CONFIG);
    } catch (err) {
      throw new MeshError('INVALID_ARGUMENT', `PROXY_CONFIG: not JSON (${(err as Error).message})`);
    }
  }
  if (!isObject(pc)) throw new MeshError('INVALID_ARGUMENT', 'PROXY_CONFIG: not a JSON object');
  const over = pc;
  const json: Record<string, unknown> = base
    ? {
        ...base,
        ...over,
        ...(isObject(base.proxyMetadata) || isObject(over.proxyMetadata)
          ? {
              proxyMetadata: {
                ...(isObject(base.proxyMetadata) ? base.proxyMetadata : {}),
                ...(isObject(over.proxyMetadata) ? over.proxyMetadata : {}),
              },
            }
          : {}),
      }
    : over;
  const meta = json.proxyMetadata;
  const proxyMetadata =
    meta !== null && typeof meta === 'object' && !Array.isArray(meta)
      ? Object.fromEntries(Object.entries(meta).filter((e): e is [string, string] => typeof e[1] === 'string'))
      : {};
  const addr = json.discoveryAddress;
  return { json, proxyMetadata, ...(typeof addr === 'string' && addr !== '' ? { discoveryAddress: addr } : {}) };
}

export function parseAgentOptions(argv: readonly string[], processEnv: NodeJS.ProcessEnv): AgentOptions {
  const { values: v } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options: OPTIONS });
  // As pilot-agent: the injected ProxyConfig's proxyMetadata entries are environment for everything below.
  const proxyConfig = proxyConfigFromEnv(processEnv, v.meshConfig ?? './etc/istio/config/mesh');
  // As pilot-agent: two pod annotations override the ProxyConfig (the injected probes already point at that status port).
  const annotations = readPodAnnotations(v.podAnnotations ?? './etc/istio/pod/annotations');
  const annotatedStatusPort = annotations[STATUS_PORT_ANNOTATION];
  const annotatedXdsAddr = nonEmptyText(annotations['sidecar.istio.io/discoveryAddress']);
  const env: NodeJS.ProcessEnv = { ...processEnv, ...proxyConfig.proxyMetadata };
  const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s === '' ? undefined : s);
  const meta = nodeMetadataFromEnv(env);
  const generator = typeof meta.GENERATOR === 'string' ? meta.GENERATOR : undefined;
  const mode = oneOf<AgentMode>(v.mode ?? (generator === 'grpc' ? 'grpc' : 'envoy'), '--mode', ['grpc', 'envoy']);
  const xdsAddr = v.xdsAddr ?? annotatedXdsAddr ?? proxyConfig.discoveryAddress ?? 'istiod.istio-system.svc:15012';
  // istiod serves plaintext xDS on 15010 and TLS on 15012; other ports say which with --xdsTransport.
  const transportText = v.xdsTransport ?? 'auto';
  const xdsTransport: XdsTransport =
    transportText === 'auto'
      ? portOf(xdsAddr) === 15010
        ? 'plaintext'
        : 'tls'
      : oneOf<XdsTransport>(transportText, '--xdsTransport', ['tls', 'plaintext']);
  const caRootCertFile = v.caRootCert ?? nonEmpty(env.CA_ROOT_CA) ?? './var/run/secrets/istio/root-cert.pem';
  const level = v.logLevel ?? env.MESHPILOT_LOG_LEVEL ?? 'info';
  const logLevel = oneOf<LogLevel>(level, '--logLevel', ['debug', 'info', 'warn', 'error']);
  const labelsJson = env.ISTIO_METAJSON_LABELS;
  const labels = v.labels !== undefined ? parseLabels(v.labels, '--labels') : labelsJson ? labelsFromJson(labelsJson) : {};
  const eccAlg = nonEmpty(env.ECC_SIGNATURE_ALGORITHM);
  const keyType = oneOf<KeyType>(
    v.keyType ?? (eccAlg === undefined || eccAlg.toUpperCase() === 'ECDSA' ? 'ECDSA' : eccAlg),
    '--keyType (ECC_SIGNATURE_ALGORITHM)',
    ['ECDSA', 'RSA'],
  );
  const outputDir = v.outputDir ?? nonEmpty(env.OUTPUT_CERTS) ?? (mode === 'grpc' ? './var/lib/istio/data' : undefined);
  const tokenFile = v.tokenFile ?? './var/run/secrets/tokens/istio-token';
  const provCertDir = v.provCert ?? nonEmpty(env.PROV_CERT);
  const retryInitialMs = positiveDuration(v.retryInitialInterval ?? '500ms', '--retryInitialInterval');
  const retryMaxMs = positiveDuration(v.retryMaxInterval ?? '30s', '--retryMaxInterval');
  if (retryMaxMs < retryInitialMs)
    throw new MeshError('INVALID_ARGUMENT', '--retryMaxInterval must not be less than --retryInitialInterval');
  const { GENERATOR: _g, CLUSTER_ID: _c, LABELS: _l, ...fromEnv } = meta;
  // Istio's bootstrap carries the workload's effective ProxyConfig as node metadata PROXY_CONFIG.
  const extraMetadata = proxyConfig.json !== undefined ? { ...fromEnv, PROXY_CONFIG: proxyConfig.json } : fromEnv;
  return {
    mode,
    xdsAddr,
    xdsTransport,
    xdsRootCertFile: v.xdsRootCert ?? nonEmpty(env.XDS_ROOT_CA) ?? caRootCertFile,
    // istiod's CA is only on the TLS port: a plaintext 15010 discovery address implies 15012 for the CA.
    caAddr: v.caAddr ?? nonEmpty(env.CA_ADDR) ?? (portOf(xdsAddr) === 15010 ? xdsAddr.replace(/15010$/, '15012') : xdsAddr),
    caRootCertFile,
    istiodSAN: v.istiodSAN ?? nonEmpty(env.ISTIOD_SAN) ?? 'istiod.istio-system.svc',
    ...(tokenFile !== '' ? { tokenFile } : {}),
    ...(provCertDir !== undefined ? { provCertDir } : {}),
    ...(outputDir !== undefined && outputDir !== '' ? { outputDir } : {}),
    grpcBootstrapFile: v.grpcBootstrap ?? nonEmpty(env.GRPC_XDS_BOOTSTRAP) ?? './etc/istio/proxy/grpc-bootstrap.json',
    envoyBootstrapFile: v.envoyBootstrap ?? './etc/istio/proxy/envoy-rev.json',
    xdsSocket: v.xdsSocket ?? './etc/istio/proxy/XDS',
    sdsSocket: v.sdsSocket ?? './var/run/secrets/workload-spiffe-uds/socket',
    proxyType: oneOf(v.proxyType ?? 'sidecar', '--proxyType', ['sidecar', 'router', 'waypoint'] as const),
    podName: v.podName ?? nonEmpty(env.POD_NAME) ?? hostname(),
    namespace: v.namespace ?? nonEmpty(env.POD_NAMESPACE) ?? 'default',
    podIp: v.podIp ?? nonEmpty(env.INSTANCE_IP) ?? defaultPodIp(),
    serviceAccount: v.serviceAccount ?? nonEmpty(env.SERVICE_ACCOUNT) ?? 'default',
    labels,
    trustDomain: v.trustDomain ?? nonEmpty(env.TRUST_DOMAIN) ?? DEFAULT_TRUST_DOMAIN,
    domain: v.domain ?? DEFAULT_DOMAIN_SUFFIX,
    clusterId: v.clusterId ?? (typeof meta.CLUSTER_ID === 'string' ? meta.CLUSTER_ID : 'Kubernetes'),
    extraMetadata,
    keyType,
    secretTtlMs: positiveDuration(v.secretTTL ?? nonEmpty(env.SECRET_TTL) ?? '24h', '--secretTTL (SECRET_TTL)'),
    gracePeriodRatio: ratio(
      v.secretGracePeriodRatio ?? nonEmpty(env.SECRET_GRACE_PERIOD_RATIO) ?? '0.5',
      '--secretGracePeriodRatio (SECRET_GRACE_PERIOD_RATIO)',
      0.01,
      0.99,
    ),
    gracePeriodJitter: ratio(
      v.secretGracePeriodRatioJitter ?? nonEmpty(env.SECRET_GRACE_PERIOD_RATIO_JITTER) ?? '0.01',
      '--secretGracePeriodRatioJitter',
      0,
      0.2,
    ),
    retryInitialMs,
    retryMaxMs,
    certRefreshIntervalMs: positiveDuration(v.certRefreshInterval ?? '15m', '--certRefreshInterval'),
    envoyXdsApi: oneOf(v.envoyXdsApi ?? 'DELTA_GRPC', '--envoyXdsApi', ['GRPC', 'DELTA_GRPC'] as const),
    logLevel,
    wasmCacheDir: v.wasmCacheDir ?? './var/lib/istio/data/wasm',
    ...(v.wasmCaCert !== undefined && v.wasmCaCert !== '' ? { wasmCaCertFile: v.wasmCaCert } : {}),
    wasmInsecureRegistries: (env.WASM_INSECURE_REGISTRIES ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    ...readinessProbeOf(proxyConfig.json),
    envoy: parseEnvoyRunOptions(
      v,
      env,
      annotatedStatusPort !== undefined ? { ...proxyConfig.json, statusPort: annotatedStatusPort } : proxyConfig.json,
    ),
  };
}

function readinessProbeOf(pc: Record<string, unknown> | undefined): { readinessProbe?: WorkloadProbe } {
  const probe = parseReadinessProbe(pc?.readinessProbe, 'ProxyConfig readinessProbe');
  return probe ? { readinessProbe: probe } : {};
}

const nonEmptyText = (s: string | undefined): string | undefined => (s === undefined || s.trim() === '' ? undefined : s.trim());

/** The downward-API annotations file; none when it is absent (off Kubernetes). */
function readPodAnnotations(file: string): Record<string, string> {
  try {
    return parsePodAnnotations(readFileSync(file, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new MeshError('INVALID_ARGUMENT', `pod annotations (--podAnnotations) ${file}: ${(err as Error).message}`);
  }
}

function labelsFromJson(text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `ISTIO_METAJSON_LABELS: not JSON (${(err as Error).message})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new MeshError('INVALID_ARGUMENT', 'ISTIO_METAJSON_LABELS: not a JSON object');
  return Object.fromEntries(Object.entries(parsed).map(([k, val]) => [k, String(val)]));
}

export const AGENT_USAGE = `usage: meshpilot agent [--mode grpc|envoy] [--xdsAddr istiod.istio-system.svc:15012] [--xdsTransport auto|tls|plaintext]
                       [--caAddr ADDR (CA_ADDR; default --xdsAddr, :15012 for :15010)] [--caRootCert FILE (CA_ROOT_CA)] [--xdsRootCert FILE (XDS_ROOT_CA)]
                       [--istiodSAN istiod.istio-system.svc] [--tokenFile ./var/run/secrets/tokens/istio-token] [--provCert DIR (PROV_CERT)]
                       [--outputDir DIR (OUTPUT_CERTS; grpc: ./var/lib/istio/data)] [--grpcBootstrap FILE (GRPC_XDS_BOOTSTRAP)]
                       [--envoyBootstrap ./etc/istio/proxy/envoy-rev.json] [--xdsSocket ./etc/istio/proxy/XDS]
                       [--sdsSocket ./var/run/secrets/workload-spiffe-uds/socket] [--proxyType sidecar|router|waypoint]
                       [--podName (POD_NAME)] [--namespace (POD_NAMESPACE)] [--podIp (INSTANCE_IP)] [--serviceAccount (SERVICE_ACCOUNT)]
                       [--labels k=v,... (ISTIO_METAJSON_LABELS)] [--trustDomain cluster.local (TRUST_DOMAIN)] [--domain cluster.local]
                       [--clusterId Kubernetes (ISTIO_META_CLUSTER_ID)] [--keyType ECDSA|RSA (ECC_SIGNATURE_ALGORITHM)]
                       [--secretTTL 24h (SECRET_TTL)] [--secretGracePeriodRatio 0.5 (SECRET_GRACE_PERIOD_RATIO)]
                       [--secretGracePeriodRatioJitter 0.01] [--retryInitialInterval 500ms] [--retryMaxInterval 30s]
                       [--certRefreshInterval 15m] [--envoyXdsApi DELTA_GRPC|GRPC] [--logLevel info]
                       [--wasmCacheDir ./var/lib/istio/data/wasm] [--wasmCaCert FILE] (WASM_INSECURE_REGISTRIES=host,...)
                       [--podAnnotations ./etc/istio/pod/annotations (status.sidecar.istio.io/port, sidecar.istio.io/discoveryAddress)]
                       [--meshConfig ./etc/istio/config/mesh (its defaultConfig, under PROXY_CONFIG: a VM's mesh.yaml)]
${ENVOY_USAGE}
env: ISTIO_META_<KEY>=value and ISTIO_METAJSON_<KEY>=json add node metadata; ISTIO_META_GENERATOR=grpc selects --mode grpc`;
