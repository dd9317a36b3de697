import { envBool, parseBool } from '../util/env.js';
import { gatewayDeployOptions, type GatewayDeployOptions } from '../gateway-deploy/options.js';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_CSR_LIMITS,
  parseJwtRule,
  parseTrustedNodeAccounts,
  type JwtRule,
  type KeyType,
  type TrustedNodeAccount,
} from '../security/index.js';
import { resolvePushThrottle } from '../xds/index.js';
import { parseLeaderElectionOptions, type LeaderElectionOptions } from '../leader/index.js';
import { parseDurationMs } from '../util/duration.js';
import { MeshError } from '../util/errors.js';
import type { LogFormat, LogLevel } from '../util/log.js';
import { DEFAULT_DOMAIN_SUFFIX, ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';

/** Everything `meshpilot discovery` is configured with; parsed once at start-up, then passed in. */
export interface DiscoveryOptions {
  /** --configDir: Istio YAML files; optional when a cluster is configured (then beside it). */
  readonly configDir: string | undefined;
  /** The Kubernetes cluster to read config and services from; undefined in file-only mode. */
  readonly cluster: ClusterOptions | undefined;
  /** --registries: service registries beyond ServiceEntries (istiod's flag; `Kubernetes` when a cluster is configured). */
  readonly registries: readonly ServiceRegistryName[];
  /** --meshConfig: a MeshConfig YAML file; it wins over the cluster's `istio` ConfigMap. */
  readonly meshConfigFile: string | undefined;
  /** --meshNetworks (istiod's --networksConfig): a MeshNetworks YAML file, watched; it wins over the ConfigMap's `meshNetworks` key. */
  readonly meshNetworksFile: string | undefined;
  readonly grpcAddr: string;
  readonly httpAddr: string;
  readonly monitoringAddr: string;
  readonly domain: string;
  readonly debounceAfterMs: number;
  readonly debounceMaxMs: number;
  readonly enableEdsDebounce: boolean;
  readonly pushThrottle: number;
  readonly xdsCacheSize: number;
  /**
   * PILOT_ENABLE_AMBIENT (istiod's default, false): serve ztunnel its workload discovery (the
   * Address and Authorization types) and keep what it needs of Kubernetes; off, a ztunnel's stream is refused.
   */
  readonly ambient: boolean;
  /**
   * ISTIO_DUAL_STACK (istiod's default, false): a dual-stack proxy (addresses of both families) is
   * given a service's addresses of both, one listener per service port with the other family's
   * address additional, and virtualOutbound also on `::`. Off, it gets one family of each service.
   */
  readonly dualStack: boolean;
  /**
   * RESOLVE_HOSTNAME_GATEWAYS (istiod's default, true): network gateways named by a host name are
   * resolved by the control plane (src/bootstrap/gateway-names.ts); off, they are left out.
   */
  readonly resolveHostnameGateways: boolean;
  /** MESHPILOT_GATEWAY_DNS_SERVERS: `host:port,…` to resolve them with, instead of resolv.conf's servers. */
  readonly gatewayDnsServers: readonly string[];
  /** PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API (istiod's default, true): Gateway API Gateways labelled with a network are network gateways. */
  readonly multiNetworkGatewayApi: boolean;
  /**
   * AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY (istiod's default, false; read only with ambient on,
   * as istiod's registerAmbient): AuthorizationPolicies annotated `istio.io/dry-run: "true"` go to
   * ztunnel marked dryRun (ztunnel 1.29+ logs them; older ones enforce them) instead of being left out.
   */
  readonly ambientDryRunAuthorizationPolicy: boolean;
  /** Ambient-only settings given while ambient is off: ignored, as istiod ignores them, with a warning at startup. */
  readonly ignoredAmbientSettings: readonly string[];
  /**
   * MESHPILOT_XDS_SEND_TIMEOUT (Go duration, default 5m; 0 disables): a stream whose response the
   * transport has not taken in this time (its proxy stopped reading) is ended and frees its share
   * of the write budget.
   */
  readonly xdsSendTimeoutMs: number;
  readonly logLevel: LogLevel;
  /** --log_as_json (istiod's flag): JSON lines; otherwise istiod's text format, its default. */
  readonly logFormat: LogFormat;
  /** PILOT_MAX_REQUESTS_PER_SECOND, resolved (0/unset → the push throttle default): new streams per second. */
  readonly maxRequestsPerSecond: number;
  /**
   * New streams that may be warming up (admitted, first response not yet sent) before tokens are
   * needed: the default rate when PILOT_MAX_REQUESTS_PER_SECOND is unset (admission keeps pace
   * with the server), 0 when it is set (that rate holds as in istiod).
   */
  readonly maxWarmingStreams: number;
  /** ISTIO_GPRC_MAXSTREAMS (istiod's spelling): HTTP/2 max concurrent streams per connection. */
  readonly maxConcurrentStreams: number;
  /** ISTIO_GPRC_MAXRECVMSGSIZE: largest message a client may send (bytes). */
  readonly maxRecvMsgSize: number;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  /** --keepaliveMaxServerConnectionAge; Infinity when unset or 0 (istiod's binary default). */
  readonly maxServerConnectionAgeMs: number;
  /** After the age GOAWAY, how long streams may continue before the connection is closed (istiod: 10s). */
  readonly maxServerConnectionAgeGraceMs: number;
  /** --shutdownDuration: signal → exit budget. */
  readonly shutdownDurationMs: number;
  readonly security: SecurityOptions;
  /** The admission webhook server and the webhook configurations whose caBundle it keeps (src/webhooks). */
  readonly webhooks: WebhookOptions;
  /** Who runs the singleton tasks among replicas (src/leader). */
  readonly leaderElection: LeaderElectionOptions;
  /** WorkloadEntry auto-registration and health (src/autoregistration), from istiod's settings. */
  readonly workloadEntries: WorkloadEntryOptions;
}

export interface WebhookOptions {
  /** --httpsAddr (istiod's, :15017): /validate and /inject over HTTPS; '' disables it. Needs the CA (--secureGRPCAddr). */
  readonly httpsAddr: string;
  /** REVISION: webhook configurations labelled istio.io/rev=<revision> are patched (istiod's `default` when unset). */
  readonly revision: string;
  /** INJECTION_WEBHOOK_CONFIG_NAME (istio-sidecar-injector); '' : MutatingWebhookConfigurations are not patched. */
  readonly injectionWebhookConfigName: string;
  /** VALIDATION_WEBHOOK_CONFIG_NAME (istio-validator[-<rev>]-<ns>); '' : ValidatingWebhookConfigurations are not patched. */
  readonly validationWebhookConfigName: string;
  /** ENABLE_NATIVE_SIDECARS (istiod's, default auto: from the nodes' kubelet versions). */
  readonly nativeSidecars: 'true' | 'false' | 'auto';
  /** COMPLIANCE_POLICY ('' or e.g. fips-140-3), seen by the injection templates. */
  readonly compliancePolicy: string;
  /** The environment at start-up: the injection templates' `env` function reads istiod's own environment. */
  readonly injectionEnv: Readonly<Record<string, string | undefined>>;
  /**
   * The Gateway API deployment controller (src/gateway-deploy), with a cluster; undefined when
   * PILOT_ENABLE_GATEWAY_API or PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER is false.
   */
  readonly gatewayDeploy: GatewayDeployOptions | undefined;
}

export type ServiceRegistryName = 'Kubernetes';

export interface ClusterOptions {
  /** --kubeconfig; undefined means in-cluster config (KUBERNETES_SERVICE_HOST is set). */
  readonly kubeconfig: string | undefined;
  /** --clusterID / CLUSTER_ID (istiod's, default Kubernetes): this cluster's id, on its endpoints and in debug output. */
  readonly clusterId: string;
  /**
   * PILOT_REMOTE_CLUSTER_TIMEOUT (30s): how long start-up waits for a remote cluster (from an
   * `istio/multiCluster` Secret) to sync before it becomes ready without it; 0 waits until it syncs.
   */
  readonly remoteClusterTimeoutMs: number;
}

/** The CA and the secure gRPC server (see src/security). */
export interface SecurityOptions {
  /** --secureGRPCAddr: TLS xDS + CA; '' disables both (then no CA is created). */
  readonly secureGrpcAddr: string;
  /** --caDir: the self-signed root's state (default <configDir>/.meshpilot/ca, ./.meshpilot/ca without one). */
  readonly caDir: string;
  /** --caCertsDir / ROOT_CA_DIR: plug-in certs (istiod's ./etc/cacerts). */
  readonly caCertsDir: string;
  /** --caKeyType: key of a new self-signed root. */
  readonly caKeyType: KeyType;
  /** --workloadCertTtl / DEFAULT_WORKLOAD_CERT_TTL (24h). */
  readonly workloadCertTtlMs: number;
  /** --maxWorkloadCertTtl / MAX_WORKLOAD_CERT_TTL (90 days = 2160h). */
  readonly maxWorkloadCertTtlMs: number;
  /** CITADEL_SELF_SIGNED_CA_CERT_TTL (87600h). */
  readonly rootCertTtlMs: number;
  /** CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL (1h; <= 0 disables rotation). */
  readonly rootCertCheckIntervalMs: number;
  /** CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE (20). */
  readonly rootCertGracePeriodPercentile: number;
  /** POD_NAMESPACE: istiod's namespace, for the serving cert's istiod.<ns>.svc. */
  readonly namespace: string;
  /** ISTIOD_CUSTOM_HOST: more DNS names on the serving cert. */
  readonly customHosts: readonly string[];
  /** JWT_RULE. */
  readonly jwtRule: JwtRule | undefined;
  /** CA_TRUSTED_NODE_ACCOUNTS. */
  readonly trustedNodeAccounts: readonly TrustedNodeAccount[];
  /** TOKEN_AUDIENCES (istio-ca): what a Kubernetes token must be issued for (TokenReview). */
  readonly tokenAudiences: readonly string[];
  /** REQUIRE_3P_TOKEN: refuse unbound (audience-less) Kubernetes tokens. */
  readonly requireThirdPartyToken: boolean;
  /** MESHPILOT_CSR_MAX_BYTES (32768) and MESHPILOT_CSR_PER_IDENTITY_PER_MINUTE (600; 0 = no limit): meshpilot's own CA limits. */
  readonly csrLimits: { readonly maxCsrBytes: number; readonly perIdentityPerMinute: number };
}

function parseNonNegativeNumber(text: string, what: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a non-negative number`);
  return n;
}

function parsePositiveInt(text: string, what: string): number {
  const n = parseIntOption(text, what);
  if (n === 0) throw new MeshError('INVALID_ARGUMENT', `${what}: must be at least 1`);
  return n;
}

function parseIntOption(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a non-negative integer`);
  return n;
}

/** Parses `discovery` flags; istiod's env settings (PILOT_*) apply where no flag is given. */
export function parseDiscoveryOptions(argv: readonly string[], env: NodeJS.ProcessEnv): DiscoveryOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      configDir: { type: 'string' },
      kubeconfig: { type: 'string' },
      clusterID: { type: 'string' },
      registries: { type: 'string' },
      meshConfig: { type: 'string' },
      meshNetworks: { type: 'string' },
      grpcAddr: { type: 'string', default: '127.0.0.1:15010' },
      httpAddr: { type: 'string', default: '127.0.0.1:8080' },
      monitoringAddr: { type: 'string', default: '127.0.0.1:15014' },
      domain: { type: 'string', default: DEFAULT_DOMAIN_SUFFIX },
      debounceAfter: { type: 'string' },
      debounceMax: { type: 'string' },
      pushThrottle: { type: 'string' },
      logLevel: { type: 'string', default: env.MESHPILOT_LOG_LEVEL ?? 'info' },
      log_as_json: { type: 'boolean', default: false },
      maxRequestsPerSecond: { type: 'string' },
      maxConcurrentStreams: { type: 'string' },
      maxRecvMsgSize: { type: 'string' },
      keepaliveInterval: { type: 'string' },
      keepaliveTimeout: { type: 'string' },
      keepaliveMaxServerConnectionAge: { type: 'string' },
      keepaliveMaxServerConnectionAgeGrace: { type: 'string' },
      shutdownDuration: { type: 'string' },
      secureGRPCAddr: { type: 'string', default: '127.0.0.1:15012' },
      httpsAddr: { type: 'string', default: '127.0.0.1:15017' },
      caDir: { type: 'string' },
      caCertsDir: { type: 'string' },
      caKeyType: { type: 'string', default: 'ECDSA' },
      workloadCertTtl: { type: 'string' },
      maxWorkloadCertTtl: { type: 'string' },
    },
  });
  const cluster: ClusterOptions | undefined =
    values.kubeconfig !== undefined || env.KUBERNETES_SERVICE_HOST
      ? {
          kubeconfig: values.kubeconfig,
          clusterId: values.clusterID || env.CLUSTER_ID || 'Kubernetes',
          remoteClusterTimeoutMs:
            env.PILOT_REMOTE_CLUSTER_TIMEOUT !== undefined
              ? parseDurationMs(env.PILOT_REMOTE_CLUSTER_TIMEOUT, 'PILOT_REMOTE_CLUSTER_TIMEOUT')
              : 30_000,
        }
      : undefined;
  if (values.kubeconfig === '') throw new MeshError('INVALID_ARGUMENT', '--kubeconfig: empty path');
  if (!values.configDir && !cluster) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      '--configDir is required (a directory of Istio YAML) unless a cluster is configured (--kubeconfig, or in a Pod)',
    );
  }
  const registries = parseRegistries(values.registries, cluster !== undefined);
  const level = values.logLevel;
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') {
    throw new MeshError('INVALID_ARGUMENT', `--logLevel: "${level}" is not one of debug, info, warn, error`);
  }
  const after = values.debounceAfter ?? env.PILOT_DEBOUNCE_AFTER;
  const max = values.debounceMax ?? env.PILOT_DEBOUNCE_MAX;
  const throttle = values.pushThrottle ?? env.PILOT_PUSH_THROTTLE;
  return {
    configDir: values.configDir || undefined,
    cluster,
    registries,
    meshConfigFile: values.meshConfig || undefined,
    meshNetworksFile: values.meshNetworks || undefined,
    grpcAddr: values.grpcAddr,
    httpAddr: values.httpAddr,
    monitoringAddr: values.monitoringAddr,
    domain: values.domain,
    debounceAfterMs: after !== undefined ? parseDurationMs(after, 'PILOT_DEBOUNCE_AFTER') : 100,
    debounceMaxMs: max !== undefined ? parseDurationMs(max, 'PILOT_DEBOUNCE_MAX') : 10_000,
    enableEdsDebounce:
      env.PILOT_ENABLE_EDS_DEBOUNCE !== undefined ? parseBool(env.PILOT_ENABLE_EDS_DEBOUNCE, 'PILOT_ENABLE_EDS_DEBOUNCE') : true,
    pushThrottle: resolvePushThrottle(throttle !== undefined ? parseIntOption(throttle, 'PILOT_PUSH_THROTTLE') : undefined),
    ...ambientSettings(env),
    dualStack: envBool(env, 'ISTIO_DUAL_STACK', false),
    resolveHostnameGateways: envBool(env, 'RESOLVE_HOSTNAME_GATEWAYS', true),
    multiNetworkGatewayApi: envBool(env, 'PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API', true),
    gatewayDnsServers: (env.MESHPILOT_GATEWAY_DNS_SERVERS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    xdsCacheSize: env.PILOT_XDS_CACHE_SIZE !== undefined ? parseIntOption(env.PILOT_XDS_CACHE_SIZE, 'PILOT_XDS_CACHE_SIZE') : 60_000,
    xdsSendTimeoutMs: env.MESHPILOT_XDS_SEND_TIMEOUT
      ? parseDurationMs(env.MESHPILOT_XDS_SEND_TIMEOUT, 'MESHPILOT_XDS_SEND_TIMEOUT')
      : 5 * 60_000,
    logLevel: level,
    logFormat: values.log_as_json ? 'json' : 'text',
    ...parseGrpcLimits(values, env),
    security: parseSecurityOptions(values, env, values.configDir || undefined),
    webhooks: parseWebhookOptions(values.httpsAddr, env),
    leaderElection: parseLeaderElectionOptions(env, parseDurationMs),
    workloadEntries: parseWorkloadEntryOptions(env),
  };
}

/** PILOT_ENABLE_AMBIENT and the settings istiod reads only with it (pilot/pkg/features/ambient.go registerAmbient). */
function ambientSettings(
  env: Readonly<Record<string, string | undefined>>,
): Pick<DiscoveryOptions, 'ambient' | 'ambientDryRunAuthorizationPolicy' | 'ignoredAmbientSettings'> {
  const ambient = envBool(env, 'PILOT_ENABLE_AMBIENT', false);
  const DRY_RUN = 'AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY';
  if (!ambient)
    return { ambient, ambientDryRunAuthorizationPolicy: false, ignoredAmbientSettings: env[DRY_RUN] !== undefined ? [DRY_RUN] : [] };
  return { ambient, ambientDryRunAuthorizationPolicy: envBool(env, DRY_RUN, false), ignoredAmbientSettings: [] };
}

export interface WorkloadEntryOptions {
  /** PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION (true). */
  readonly autoRegistration: boolean;
  /** PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS (true). */
  readonly healthChecks: boolean;
  /** PILOT_WORKLOAD_ENTRY_GRACE_PERIOD (10s): how long a disconnected proxy's entry stays. */
  readonly gracePeriodMs: number;
  /** ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY (true): the stream's identity must match the entry. */
  readonly validateIdentity: boolean;
}

function parseWorkloadEntryOptions(env: NodeJS.ProcessEnv): WorkloadEntryOptions {
  const grace = env.PILOT_WORKLOAD_ENTRY_GRACE_PERIOD;
  const gracePeriodMs = grace ? parseDurationMs(grace, 'PILOT_WORKLOAD_ENTRY_GRACE_PERIOD') : 10_000;
  if (gracePeriodMs <= 0) throw new MeshError('INVALID_ARGUMENT', `PILOT_WORKLOAD_ENTRY_GRACE_PERIOD: "${grace}" must be more than 0`);
  return {
    autoRegistration: envBool(env, 'PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', true),
    healthChecks: envBool(env, 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS', true),
    gracePeriodMs,
    validateIdentity: envBool(env, 'ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY', true),
  };
}

/** Webhook server and caBundle upkeep: the flag, then istiod's env names and defaults. */
function parseWebhookOptions(httpsAddr: string, env: NodeJS.ProcessEnv): WebhookOptions {
  if (httpsAddr !== '') parseListenAddress(httpsAddr, '--httpsAddr');
  const revision = env.REVISION?.trim() || 'default';
  const namespace = env.POD_NAMESPACE || ISTIO_SYSTEM_NAMESPACE;
  return {
    httpsAddr,
    revision,
    injectionWebhookConfigName: env.INJECTION_WEBHOOK_CONFIG_NAME ?? 'istio-sidecar-injector',
    validationWebhookConfigName:
      env.VALIDATION_WEBHOOK_CONFIG_NAME ?? `istio-validator${revision === 'default' ? '' : `-${revision}`}-${namespace}`,
    nativeSidecars: parseNativeSidecars(env.ENABLE_NATIVE_SIDECARS),
    compliancePolicy: env.COMPLIANCE_POLICY ?? '',
    injectionEnv: Object.freeze({ ...env }),
    gatewayDeploy:
      envBool(env, 'PILOT_ENABLE_GATEWAY_API', true) && envBool(env, 'PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER', true)
        ? gatewayDeployOptions(env)
        : undefined,
  };
}

function parseNativeSidecars(v: string | undefined): WebhookOptions['nativeSidecars'] {
  const mode = (v ?? 'auto').trim().toLowerCase();
  if (mode === 'true' || mode === 'false' || mode === 'auto') return mode;
  throw new MeshError('INVALID_ARGUMENT', `ENABLE_NATIVE_SIDECARS: "${v}" is not true, false or auto`);
}

/** istiod's --registries: a comma list; Kubernetes needs a cluster (and is the default with one). */
function parseRegistries(flag: string | undefined, haveCluster: boolean): ServiceRegistryName[] {
  if (flag === undefined) return haveCluster ? ['Kubernetes'] : [];
  const out: ServiceRegistryName[] = [];
  for (const name of flag
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean)) {
    if (name !== 'Kubernetes')
      throw new MeshError('INVALID_ARGUMENT', `--registries: "${name}" is not a registry meshpilot has (Kubernetes)`);
    if (!haveCluster)
      throw new MeshError('INVALID_ARGUMENT', '--registries Kubernetes needs a cluster: --kubeconfig FILE, or run in a Pod');
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

/** CA and secure-server settings: flags first, then istiod's env names, then istiod's defaults. */
function parseSecurityOptions(
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
  configDir: string | undefined,
): SecurityOptions {
  const flag = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const secureGrpcAddr = flag('secureGRPCAddr') ?? '';
  if (secureGrpcAddr !== '') parseListenAddress(secureGrpcAddr, '--secureGRPCAddr');
  const keyType = (flag('caKeyType') ?? 'ECDSA').toUpperCase();
  if (keyType !== 'ECDSA' && keyType !== 'RSA')
    throw new MeshError('INVALID_ARGUMENT', `--caKeyType: "${flag('caKeyType')}" is not ECDSA or RSA`);
  const duration = (value: string | undefined, what: string, dflt: number): number => {
    const ms = value !== undefined ? parseDurationMs(value, what) : dflt;
    if (ms <= 0) throw new MeshError('INVALID_ARGUMENT', `${what}: "${value}" must be more than 0`);
    return ms;
  };
  const workload = duration(
    flag('workloadCertTtl') ?? env.DEFAULT_WORKLOAD_CERT_TTL,
    'DEFAULT_WORKLOAD_CERT_TTL (--workloadCertTtl)',
    24 * 3_600_000,
  );
  const max = duration(
    flag('maxWorkloadCertTtl') ?? env.MAX_WORKLOAD_CERT_TTL,
    'MAX_WORKLOAD_CERT_TTL (--maxWorkloadCertTtl)',
    90 * 24 * 3_600_000,
  );
  if (workload > max)
    throw new MeshError('INVALID_ARGUMENT', `--workloadCertTtl (${workload} ms) must not exceed --maxWorkloadCertTtl (${max} ms)`);
  const interval = env.CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL;
  const grace = env.CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE;
  const gracePct = grace !== undefined ? parseIntOption(grace, 'CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE') : 20;
  if (gracePct < 1 || gracePct > 99)
    throw new MeshError('INVALID_ARGUMENT', `CITADEL_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: ${gracePct} is not between 1 and 99`);
  const nodeAccounts = parseTrustedNodeAccounts(env.CA_TRUSTED_NODE_ACCOUNTS);
  // istiod warns and skips a bad entry; for a setting that grants impersonation we refuse to start.
  if (nodeAccounts.invalid.length)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `CA_TRUSTED_NODE_ACCOUNTS: ${nodeAccounts.invalid.map((e) => `"${e}"`).join(', ')} not <namespace>/<serviceaccount>`,
    );
  return {
    secureGrpcAddr,
    caDir: flag('caDir') ?? path.join(configDir ?? '.', '.meshpilot', 'ca'),
    caCertsDir: flag('caCertsDir') ?? env.ROOT_CA_DIR ?? './etc/cacerts',
    caKeyType: keyType,
    workloadCertTtlMs: workload,
    maxWorkloadCertTtlMs: max,
    rootCertTtlMs: duration(env.CITADEL_SELF_SIGNED_CA_CERT_TTL, 'CITADEL_SELF_SIGNED_CA_CERT_TTL', 3650 * 24 * 3_600_000),
    rootCertCheckIntervalMs:
      interval !== undefined
        ? parseDurationMs(interval.replace(/^-/, ''), 'CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL') * (interval.startsWith('-') ? -1 : 1)
        : 3_600_000,
    rootCertGracePeriodPercentile: gracePct,
    namespace: env.POD_NAMESPACE || ISTIO_SYSTEM_NAMESPACE,
    customHosts: (env.ISTIOD_CUSTOM_HOST ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean),
    jwtRule: env.JWT_RULE ? parseJwtRule(env.JWT_RULE) : undefined,
    trustedNodeAccounts: nodeAccounts.accounts,
    tokenAudiences: (env.TOKEN_AUDIENCES || 'istio-ca')
      .split(',')
      .map((a) => a.trim())
      .filter(Boolean),
    requireThirdPartyToken:
      env.REQUIRE_3P_TOKEN !== undefined && env.REQUIRE_3P_TOKEN !== '' ? parseBool(env.REQUIRE_3P_TOKEN, 'REQUIRE_3P_TOKEN') : false,
    csrLimits: {
      maxCsrBytes: env.MESHPILOT_CSR_MAX_BYTES
        ? parseIntOption(env.MESHPILOT_CSR_MAX_BYTES, 'MESHPILOT_CSR_MAX_BYTES')
        : DEFAULT_CSR_LIMITS.maxCsrBytes,
      perIdentityPerMinute: env.MESHPILOT_CSR_PER_IDENTITY_PER_MINUTE
        ? parseIntOption(env.MESHPILOT_CSR_PER_IDENTITY_PER_MINUTE, 'MESHPILOT_CSR_PER_IDENTITY_PER_MINUTE')
        : DEFAULT_CSR_LIMITS.perIdentityPerMinute,
    },
  };
}

type GrpcLimits = Pick<
  DiscoveryOptions,
  | 'maxRequestsPerSecond'
  | 'maxWarmingStreams'
  | 'maxConcurrentStreams'
  | 'maxRecvMsgSize'
  | 'keepaliveIntervalMs'
  | 'keepaliveTimeoutMs'
  | 'maxServerConnectionAgeMs'
  | 'maxServerConnectionAgeGraceMs'
  | 'shutdownDurationMs'
>;

/** Limits and lifecycle of the gRPC server: flags first, then istiod's env names, then istiod's defaults. */
function parseGrpcLimits(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): GrpcLimits {
  const flag = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const rps = flag('maxRequestsPerSecond') ?? env.PILOT_MAX_REQUESTS_PER_SECOND;
  const streams = flag('maxConcurrentStreams') ?? env.ISTIO_GPRC_MAXSTREAMS;
  const recv = flag('maxRecvMsgSize') ?? env.ISTIO_GPRC_MAXRECVMSGSIZE;
  const interval = flag('keepaliveInterval');
  const timeout = flag('keepaliveTimeout');
  const age = flag('keepaliveMaxServerConnectionAge');
  const grace = flag('keepaliveMaxServerConnectionAgeGrace');
  const shutdown = flag('shutdownDuration');
  const rpsValue = rps !== undefined ? parseNonNegativeNumber(rps, 'PILOT_MAX_REQUESTS_PER_SECOND (--maxRequestsPerSecond)') : 0;
  const ageMs = age !== undefined ? parseDurationMs(age, '--keepaliveMaxServerConnectionAge') : 0;
  const shutdownMs = shutdown !== undefined ? parseDurationMs(shutdown, '--shutdownDuration') : 10_000;
  if (shutdownMs <= 0) throw new MeshError('INVALID_ARGUMENT', `--shutdownDuration: "${shutdown}" must be more than 0`);
  const intervalMs = interval !== undefined ? parseDurationMs(interval, '--keepaliveInterval') : 30_000;
  const timeoutMs = timeout !== undefined ? parseDurationMs(timeout, '--keepaliveTimeout') : 10_000;
  if (intervalMs <= 0) throw new MeshError('INVALID_ARGUMENT', `--keepaliveInterval: "${interval}" must be more than 0`);
  if (timeoutMs <= 0) throw new MeshError('INVALID_ARGUMENT', `--keepaliveTimeout: "${timeout}" must be more than 0`);
  return {
    // istiod: a value <= 0 means "size it from the machine", the same heuristic as PILOT_PUSH_THROTTLE.
    maxRequestsPerSecond: rpsValue > 0 ? rpsValue : resolvePushThrottle(undefined),
    maxWarmingStreams: rpsValue > 0 ? 0 : resolvePushThrottle(undefined),
    maxConcurrentStreams: streams !== undefined ? parsePositiveInt(streams, 'ISTIO_GPRC_MAXSTREAMS (--maxConcurrentStreams)') : 100_000,
    maxRecvMsgSize: recv !== undefined ? parsePositiveInt(recv, 'ISTIO_GPRC_MAXRECVMSGSIZE (--maxRecvMsgSize)') : 4 * 1024 * 1024,
    keepaliveIntervalMs: intervalMs,
    keepaliveTimeoutMs: timeoutMs,
    maxServerConnectionAgeMs: ageMs > 0 ? ageMs : Number.POSITIVE_INFINITY,
    maxServerConnectionAgeGraceMs: grace !== undefined ? parseDurationMs(grace, '--keepaliveMaxServerConnectionAgeGrace') : 10_000,
    shutdownDurationMs: shutdownMs,
  };
}

/** `host:port`, `:port` (all interfaces, as istiod) or `[v6]:port` → listen arguments. */
export function parseListenAddress(addr: string, what: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port > 65535) throw new MeshError('INVALID_ARGUMENT', `${what}: "${addr}" is not host:port`);
  return { host: m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!), port };
}
