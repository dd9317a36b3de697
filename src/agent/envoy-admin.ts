/**
 * What the agent asks of Envoy's admin API (127.0.0.1:<adminPort>), as pilot-agent does: the
 * stats its readiness probe reads, and the graceful listener drain on shutdown.
 */
import { MeshError, errorMessage } from '../util/errors.js';

export interface EnvoyAdmin {
  readonly port: number;
  /** Text of `GET /<path>`; a non-2xx answer is an error naming the path and status. */
  get(path: string, timeoutMs?: number): Promise<string>;
  /** `POST /drain_listeners?graceful` (`inboundonly` for sidecars, as pilot-agent). */
  drainListeners(inboundOnly: boolean): Promise<void>;
  /** Why Envoy is not ready yet, or undefined when it is (pilot-agent's readiness probe). */
  notReadyReason(): Promise<string | undefined>;
}

/** Envoy's ServerInfo.State: 0 LIVE, 1 DRAINING, 2 PRE_INITIALIZING, 3 INITIALIZING. */
const SERVER_STATES = ['LIVE', 'DRAINING', 'PRE_INITIALIZING', 'INITIALIZING'];

/** `name: value` lines of `/stats` (text format) for the names asked for; absent ones are 0. */
export function parseStatLines(text: string, names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of text.split('\n')) {
    const sep = line.lastIndexOf(':');
    if (sep < 0) continue;
    const name = line.slice(0, sep).trim();
    if (name in out) out[name] = Number(line.slice(sep + 1).trim()) || 0;
  }
  return out;
}

export function envoyAdmin(port: number): EnvoyAdmin {
  const base = `http://127.0.0.1:${port}`;
  const call = async (method: 'GET' | 'POST', path: string, timeoutMs: number): Promise<string> => {
    let res: Response;
    try {
      res = await fetch(`${base}/${path}`, { method, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      throw new MeshError('UNAVAILABLE', `Envoy admin ${method} /${path} on 127.0.0.1:${port}: ${errorMessage(err)}`, { cause: err });
    }
    const body = await res.text();
    if (!res.ok) throw new MeshError('UNAVAILABLE', `Envoy admin ${method} /${path}: HTTP ${res.status} ${body.trim().slice(0, 200)}`);
    return body;
  };
  // Once Envoy has its first CDS and LDS and is LIVE with workers started it stays so for the
  // life of that process (Istio uses neither hot restart nor admin health-check failing), so like
  // pilot-agent the probe remembers success; a restarted Envoy gets a new EnvoyAdmin.
  let firstConfig = false;
  let live = false;
  return {
    port,
    get: (path, timeoutMs = 5000) => call('GET', path, timeoutMs),
    async drainListeners(inboundOnly) {
      await call('POST', inboundOnly ? 'drain_listeners?inboundonly&graceful' : 'drain_listeners?graceful', 5000);
    },
    async notReadyReason() {
      if (!firstConfig) {
        const names = [
          'cluster_manager.cds.update_success',
          'cluster_manager.cds.update_rejected',
          'listener_manager.lds.update_success',
          'listener_manager.lds.update_rejected',
        ];
        const s = parseStatLines(
          await call(
            'GET',
            'stats?usedonly&filter=^(cluster_manager\\.cds|listener_manager\\.lds)\\.(update_success|update_rejected)$',
            5000,
          ),
          names,
        );
        if (!(s[names[0]!]! > 0 && s[names[2]!]! > 0)) {
          return `config not received from the control plane: cds updates ${s[names[0]!]} successful, ${s[names[1]!]} rejected; lds updates ${s[names[2]!]} successful, ${s[names[3]!]} rejected`;
        }
        firstConfig = true;
      }
      if (!live) {
        const text = await call('GET', 'stats?filter=^(server\\.state|listener_manager\\.workers_started)$', 5000);
        if (!text.includes('server.state')) return 'Envoy has not reported server.state yet';
        const s = parseStatLines(text, ['server.state', 'listener_manager.workers_started']);
        const state = s['server.state']!;
        if (state !== 0) return `Envoy is not live: server.state is ${SERVER_STATES[state] ?? state}`;
        if (s['listener_manager.workers_started'] !== 1) return 'Envoy workers have not started';
        live = true;
      }
      return undefined;
    },
  };
}
