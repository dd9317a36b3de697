import { parseArgs } from 'node:util';
import { resolvePushThrottle } from '../xds/push-queue.js';
import { MeshError } from '../util/errors.js';
import type { LogLevel } from '../util/log.js';

/** Everything `meshpilot discovery` is configured with; parsed once at start-up, then passed in. */
export interface DiscoveryOptions {
  readonly configDir: string;
  readonly grpcAddr: string;
  readonly httpAddr: string;
  readonly monitoringAddr: string;
  readonly domain: string;
  readonly debounceAfterMs: number;
  readonly debounceMaxMs: number;
  readonly enableEdsDebounce: boolean;
  readonly pushThrottle: number;
  readonly xdsCacheSize: number;
  readonly logLevel: LogLevel;
}

/** istiod's duration syntax for PILOT_DEBOUNCE_* (`100ms`, `10s`, `1m`); a bare number is ms. */
export function parseDurationMs(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a duration (e.g. 100ms, 10s)`);
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[unit as 'ms' | 's' | 'm' | 'h'];
}

function parseIntOption(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a non-negative integer`);
  return n;
}

function parseBool(text: string, what: string): boolean {
  if (/^(1|true|yes)$/i.test(text)) return true;
  if (/^(0|false|no)$/i.test(text)) return false;
  throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a boolean`);
}

/** Parses `discovery` flags; istiod's env settings (PILOT_*) apply where no flag is given. */
export function parseDiscoveryOptions(argv: readonly string[], env: NodeJS.ProcessEnv): DiscoveryOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      configDir: { type: 'string' },
      grpcAddr: { type: 'string', default: '127.0.0.1:15010' },
      httpAddr: { type: 'string', default: '127.0.0.1:8080' },
      monitoringAddr: { type: 'string', default: '127.0.0.1:15014' },
      domain: { type: 'string', default: 'cluster.local' },
      debounceAfter: { type: 'string' },
      debounceMax: { type: 'string' },
      pushThrottle: { type: 'string' },
      logLevel: { type: 'string', default: env.MESHPILOT_LOG_LEVEL ?? 'info' },
    },
  });
  if (!values.configDir) throw new MeshError('INVALID_ARGUMENT', '--configDir is required (a directory of Istio YAML)');
  const level = values.logLevel;
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error') {
    throw new MeshError('INVALID_ARGUMENT', `--logLevel: "${level}" is not one of debug, info, warn, error`);
  }
  const after = values.debounceAfter ?? env.PILOT_DEBOUNCE_AFTER;
  const max = values.debounceMax ?? env.PILOT_DEBOUNCE_MAX;
  const throttle = values.pushThrottle ?? env.PILOT_PUSH_THROTTLE;
  return {
    configDir: values.configDir,
    grpcAddr: values.grpcAddr,
    httpAddr: values.httpAddr,
    monitoringAddr: values.monitoringAddr,
    domain: values.domain,
    debounceAfterMs: after !== undefined ? parseDurationMs(after, 'PILOT_DEBOUNCE_AFTER') : 100,
    debounceMaxMs: max !== undefined ? parseDurationMs(max, 'PILOT_DEBOUNCE_MAX') : 10_000,
    enableEdsDebounce: env.PILOT_ENABLE_EDS_DEBOUNCE !== undefined ? parseBool(env.PILOT_ENABLE_EDS_DEBOUNCE, 'PILOT_ENABLE_EDS_DEBOUNCE') : true,
    pushThrottle: resolvePushThrottle(throttle !== undefined ? parseIntOption(throttle, 'PILOT_PUSH_THROTTLE') : undefined),
    xdsCacheSize: env.PILOT_XDS_CACHE_SIZE !== undefined ? parseIntOption(env.PILOT_XDS_CACHE_SIZE, 'PILOT_XDS_CACHE_SIZE') : 60_000,
    logLevel: level,
  };
}

/** `host:port`, `:port` (all interfaces, as istiod) or `[v6]:port` → listen arguments. */
export function parseListenAddress(addr: string, what: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port > 65535) throw new MeshError('INVALID_ARGUMENT', `${what}: "${addr}" is not host:port`);
  return { host: m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!), port };
}
