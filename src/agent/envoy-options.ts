/**
 * How the agent runs Envoy (envoy mode), from flags, the injected ProxyConfig (PROXY_CONFIG) and
 * pilot-agent's environment, with pilot-agent's defaults: the binary, its command line, the ports
 * of the admin API, the status server and Envoy's health and Prometheus listeners, the drain and
 * the restart budget.
 */
import { parseDurationMs } from '../util/duration.js';
import { envBool, parseBool } from '../util/env.js';
import { MeshError } from '../util/errors.js';

export interface EnvoyRunOptions {
  /** Start and supervise Envoy (default); false only writes the bootstrap, for an Envoy run by something else. */
  readonly run: boolean;
  /** ProxyConfig binaryPath (pilot-agent: /usr/local/bin/envoy). */
  readonly binaryPath: string;
  /** Envoy's admin API on 127.0.0.1 (ProxyConfig proxyAdminPort, 15000). */
  readonly adminPort: number;
  /** The agent's status server: readiness, merged Prometheus, app probes (ProxyConfig statusPort, 15020; 0 = none, as pilot-agent). */
  readonly statusPort: number;
  /** Envoy's listener that answers /healthz/ready through the agent (ENVOY_STATUS_PORT, 15021). */
  readonly envoyStatusPort: number;
  /** Envoy's listener serving its own /stats/prometheus (ENVOY_PROMETHEUS_PORT, 15090). */
  readonly prometheusPort: number;
  /** Worker threads (ProxyConfig concurrency, 2); 0 leaves it to Envoy (one per hardware thread). */
  readonly concurrency: number;
  /** --drain-time-s: how long Envoy drains once told to (ProxyConfig drainDuration, 45s). */
  readonly drainDurationMs: number;
  /** How long the agent waits after starting the drain before stopping Envoy (ProxyConfig terminationDrainDuration, 5s). */
  readonly terminationDrainDurationMs: number;
  /** Envoy's -l (pilot-agent --proxyLogLevel, warning); `level,component:level` also sets component levels. */
  readonly logLevel: string;
  /** Envoy's --component-log-level (pilot-agent --proxyComponentLogLevel, misc:error). */
  readonly componentLogLevel: string;
  /** Restarts of an Envoy that exits on its own before the agent gives up (pilot-agent's retry budget: 10). */
  readonly maxRestarts: number;
  /** Delay before the first restart, doubled for each further one (pilot-agent: 200ms). */
  readonly restartInitialIntervalMs: number;
  /** ISTIO_KUBE_APP_PROBERS: the app probes injection moved to the status server (JSON; '' = none). */
  readonly appProbers: string;
  /** REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION: app probes go to localhost instead of the pod IP. */
  readonly probeLocalhost: boolean;
  /** ISTIO_PROMETHEUS_ANNOTATIONS: the app's metrics merged into /stats/prometheus (JSON; '' = none). */
  readonly appMetrics: string;
}

export const ENVOY_FLAGS = {
  runEnvoy: { type: 'string' },
  envoyBinary: { type: 'string' },
  adminPort: { type: 'string' },
  statusPort: { type: 'string' },
  envoyStatusPort: { type: 'string' },
  envoyPrometheusPort: { type: 'string' },
  concurrency: { type: 'string' },
  drainDuration: { type: 'string' },
  terminationDrainDuration: { type: 'string' },
  proxyLogLevel: { type: 'string' },
  proxyComponentLogLevel: { type: 'string' },
  envoyMaxRestarts: { type: 'string' },
  envoyRestartInterval: { type: 'string' },
} as const;

export type EnvoyFlagValues = { readonly [K in keyof typeof ENVOY_FLAGS]?: string };

export const ENVOY_USAGE = `envoy mode: [--runEnvoy true|false] [--envoyBinary /usr/local/bin/envoy (ProxyConfig binaryPath)] [--adminPort 15000 (proxyAdminPort)]
                       [--statusPort 15020 (statusPort; 0 = no status server)] [--envoyStatusPort 15021 (ENVOY_STATUS_PORT)]
                       [--envoyPrometheusPort 15090 (ENVOY_PROMETHEUS_PORT)] [--concurrency 2 (concurrency; 0 = Envoy's default)]
                       [--drainDuration 45s (drainDuration)] [--terminationDrainDuration 5s (TERMINATION_DRAIN_DURATION_SECONDS)]
                       [--proxyLogLevel warning] [--proxyComponentLogLevel misc:error] [--envoyMaxRestarts 10] [--envoyRestartInterval 200ms]
                       ISTIO_KUBE_APP_PROBERS: app probes served on the status port as /app-health/<container>/livez|readyz|startupz
                       (to the pod IP; REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION=true: loopback); ISTIO_PROMETHEUS_ANNOTATIONS: app
                       metrics merged into the status port's /stats/prometheus (sidecars)`;

function port(text: string, what: string, min = 1): number {
  const n = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || n < min || n > 65535)
    throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a port (${min}-65535)`);
  return n;
}

function count(text: string, what: string): number {
  if (!/^\d+$/.test(text.trim())) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a whole number`);
  return Number(text.trim());
}

/**
 * The pod's annotations as the downward API writes them (`key="value"` per line, values quoted as
 * Go's strconv.Quote does), which injection mounts at ./etc/istio/pod/annotations.
 */
export function parsePodAnnotations(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([^=]+)=(".*")$/.exec(line.trim());
    if (!m) continue;
    try {
      out[m[1]!] = JSON.parse(m[2]!) as string;
    } catch {
      out[m[1]!] = m[2]!.slice(1, -1);
    }
  }
  return out;
}

/** A ProxyConfig field as text: numbers (ports, concurrency) and proto JSON durations ("45s") alike. */
function pcText(pc: Readonly<Record<string, unknown>> | undefined, key: string): string | undefined {
  const v = pc?.[key];
  if (typeof v === 'number') return String(v);
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * `v`: the parsed flags; `env`: the environment after PROXY_CONFIG's proxyMetadata; `pc`: PROXY_CONFIG.
 * Precedence: flag, then the environment pilot-agent reads, then ProxyConfig, then pilot-agent's default.
 */
export function parseEnvoyRunOptions(
  v: EnvoyFlagValues,
  env: NodeJS.ProcessEnv,
  pc: Readonly<Record<string, unknown>> | undefined,
): EnvoyRunOptions {
  const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s === '' ? undefined : s);
  const termEnv = nonEmpty(env.TERMINATION_DRAIN_DURATION_SECONDS);
  if (termEnv !== undefined && !/^\d+$/.test(termEnv))
    throw new MeshError('INVALID_ARGUMENT', `TERMINATION_DRAIN_DURATION_SECONDS: "${termEnv}" is not a whole number of seconds`);
  const termText =
    v.terminationDrainDuration ?? (termEnv !== undefined ? `${termEnv}s` : undefined) ?? pcText(pc, 'terminationDrainDuration') ?? '5s';
  const restartInterval = parseDurationMs(v.envoyRestartInterval ?? '200ms', '--envoyRestartInterval');
  if (restartInterval <= 0)
    throw new MeshError('INVALID_ARGUMENT', `--envoyRestartInterval: "${v.envoyRestartInterval}" must be more than 0`);
  return {
    run: parseBool(v.runEnvoy ?? 'true', '--runEnvoy'),
    binaryPath: v.envoyBinary ?? pcText(pc, 'binaryPath') ?? '/usr/local/bin/envoy',
    adminPort: port(v.adminPort ?? pcText(pc, 'proxyAdminPort') ?? '15000', '--adminPort (proxyAdminPort)'),
    statusPort: port(v.statusPort ?? pcText(pc, 'statusPort') ?? '15020', '--statusPort (statusPort)', 0),
    envoyStatusPort: port(v.envoyStatusPort ?? nonEmpty(env.ENVOY_STATUS_PORT) ?? '15021', '--envoyStatusPort (ENVOY_STATUS_PORT)'),
    prometheusPort: port(
      v.envoyPrometheusPort ?? nonEmpty(env.ENVOY_PROMETHEUS_PORT) ?? '15090',
      '--envoyPrometheusPort (ENVOY_PROMETHEUS_PORT)',
    ),
    concurrency: count(v.concurrency ?? pcText(pc, 'concurrency') ?? '2', '--concurrency (concurrency)'),
    drainDurationMs: parseDurationMs(v.drainDuration ?? pcText(pc, 'drainDuration') ?? '45s', '--drainDuration (drainDuration)'),
    terminationDrainDurationMs: parseDurationMs(termText, '--terminationDrainDuration (TERMINATION_DRAIN_DURATION_SECONDS)'),
    logLevel: v.proxyLogLevel ?? 'warning',
    componentLogLevel: v.proxyComponentLogLevel ?? 'misc:error',
    maxRestarts: count(v.envoyMaxRestarts ?? '10', '--envoyMaxRestarts'),
    restartInitialIntervalMs: restartInterval,
    appProbers: env.ISTIO_KUBE_APP_PROBERS ?? '',
    probeLocalhost: envBool(env, 'REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', false),
    appMetrics: env.ISTIO_PROMETHEUS_ANNOTATIONS ?? '',
  };
}
