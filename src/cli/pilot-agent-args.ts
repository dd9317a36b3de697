import { MeshError } from '../util/errors.js';

/**
 * `pilot-agent proxy sidecar|router [flags]`, as Istio's injection templates run the istio-proxy
 * container (proxyv2's entrypoint is pilot-agent), turned into `meshpilot agent` flags so a pod
 * injected with a meshpilot image starts unchanged. pilot-agent's --domain is the proxy's DNS
 * domain `<namespace>.svc.<cluster domain>`; the agent takes the cluster domain. The Envoy flags
 * (--concurrency, --proxyLogLevel, --proxyComponentLogLevel) pass through; logging flags without an
 * agent counterpart are accepted and have no effect; any other flag is an error.
 */

/** pilot-agent flags that take a value and have no effect here. */
const IGNORED_WITH_VALUE = new Set([
  'stsPort',
  'outlierLogPath',
  'templateFile',
  'tokenManagerPlugin',
  'log_target',
  'log_caller',
  'log_stacktrace_level',
  'log_rotate',
  'log_rotate_max_age',
  'log_rotate_max_backups',
  'log_rotate_max_size',
]);
const IGNORED_BOOL = new Set(['log_as_json']);
/** pilot-agent flags the agent takes as they are. */
const PASSED_THROUGH = new Set(['concurrency', 'proxyLogLevel', 'proxyComponentLogLevel']);

/** Istio's log levels (pkg/log) onto the agent's. */
const LEVELS: Readonly<Record<string, string>> = {
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  fatal: 'error',
  none: 'error',
};

/** The level of scope `default` (or `all`) in `--log_output_level=default:info,ads:debug`. */
function defaultLevel(spec: string): string | undefined {
  let level: string | undefined;
  for (const item of spec.split(',')) {
    const [scope = '', value = ''] = item.includes(':') ? item.split(':', 2) : ['default', item];
    if (scope !== 'default' && scope !== 'all') continue;
    level = LEVELS[value.trim()];
    if (level === undefined)
      throw new MeshError(
        'INVALID_ARGUMENT',
        `invalid --log_output_level "${spec}": level "${value}" is not one of ${Object.keys(LEVELS).join(', ')}`,
      );
  }
  return level;
}

/** `argv`: what follows `proxy` (`sidecar --domain …`). */
export function agentArgsFromPilotAgentProxy(argv: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  const type = argv[0] !== undefined && !argv[0].startsWith('-') ? argv[0] : 'sidecar';
  if (argv[0] === type) i = 1;
  if (type !== 'sidecar' && type !== 'router' && type !== 'waypoint')
    throw new MeshError('INVALID_ARGUMENT', `proxy type "${type}" is not sidecar, router or waypoint`);
  out.push('--proxyType', type);
  for (; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('-')) throw new MeshError('INVALID_ARGUMENT', `unexpected argument "${arg}" after the proxy type`);
    const body = arg.replace(/^--?/, '');
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const inline = eq < 0 ? undefined : body.slice(eq + 1);
    if (IGNORED_BOOL.has(name)) continue;
    const known = name === 'domain' || name === 'log_output_level' || IGNORED_WITH_VALUE.has(name) || PASSED_THROUGH.has(name);
    if (!known)
      throw new MeshError('INVALID_ARGUMENT', `pilot-agent proxy flag ${arg} is not supported by meshpilot (see meshpilot agent --help)`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new MeshError('INVALID_ARGUMENT', `flag --${name} needs a value`);
    if (PASSED_THROUGH.has(name)) {
      out.push(`--${name}`, value);
    } else if (name === 'domain') {
      // `<ns>.svc.<cluster domain>`; a value without `.svc.` is taken as the cluster domain itself.
      const at = value.indexOf('.svc.');
      out.push('--domain', at < 0 ? value : value.slice(at + '.svc.'.length));
    } else if (name === 'log_output_level') {
      const level = defaultLevel(value);
      if (level !== undefined) out.push('--logLevel', level);
    }
  }
  return out;
}
