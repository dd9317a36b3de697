/**
 * The application probes injection moved onto the agent's status port (ISTIO_KUBE_APP_PROBERS:
 * `{"/app-health/<container>/readyz": {"httpGet": {...}, "timeoutSeconds": 1}, …}`), answered as
 * pilot-agent answers them: the agent probes the app the way the kubelet would have (HTTP GET,
 * TCP connect or gRPC health check to the pod IP) from 127.0.0.6, the source address Istio's
 * iptables rules let through to the app without redirecting it into Envoy.
 */
import { credentials, Client, Metadata } from '@grpc/grpc-js';
import http from 'node:http';
import https from 'node:https';
import { connect, isIP } from 'node:net';
import { MeshError, errorMessage } from '../util/errors.js';

interface HttpGetAction {
  readonly path?: string;
  readonly port: number;
  readonly host?: string;
  readonly scheme?: string;
  readonly httpHeaders?: readonly { readonly name: string; readonly value: string }[];
}

export interface AppProber {
  readonly httpGet?: HttpGetAction;
  readonly tcpSocket?: { readonly port: number; readonly host?: string };
  readonly grpc?: { readonly port: number; readonly service?: string };
  readonly timeoutSeconds?: number;
}

export type AppProbers = ReadonlyMap<string, AppProber>;

const PROBER_PATH = /^\/app-health\/[^/]+\/(livez|readyz|startupz)$/;

/** ISTIO_KUBE_APP_PROBERS → probers by URL path; anything malformed is an error naming the path. */
export function parseAppProbers(json: string): AppProbers {
  const out = new Map<string, AppProber>();
  if (json.trim() === '') return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `ISTIO_KUBE_APP_PROBERS: not JSON (${errorMessage(err)})`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new MeshError('INVALID_ARGUMENT', 'ISTIO_KUBE_APP_PROBERS: not a JSON object');
  for (const [path, value] of Object.entries(parsed)) {
    const what = `ISTIO_KUBE_APP_PROBERS ${path}`;
    if (!PROBER_PATH.test(path)) throw new MeshError('INVALID_ARGUMENT', `${what}: the path must match ${PROBER_PATH.source}`);
    const p = (value ?? {}) as AppProber;
    const kinds = [p.httpGet, p.tcpSocket, p.grpc].filter((k) => k !== undefined && k !== null);
    if (kinds.length !== 1) throw new MeshError('INVALID_ARGUMENT', `${what}: needs exactly one of httpGet, tcpSocket, grpc`);
    const port = (p.httpGet ?? p.tcpSocket ?? p.grpc)!.port;
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new MeshError(
        'INVALID_ARGUMENT',
        `${what}: the port must be a number (named ports are resolved by injection), got ${JSON.stringify(port)}`,
      );
    out.set(path, p);
  }
  return out;
}

/** Headers of the kubelet's request passed on to the app (Go's http.Header never holds Host). */
const NOT_FORWARDED = new Set(['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'upgrade']);

function sourceFor(dest: string): string | undefined {
  return isIP(dest) === 4 ? '127.0.0.6' : isIP(dest) === 6 ? '::6' : undefined;
}

function httpProbe(a: HttpGetAction, dest: string, incoming: http.IncomingHttpHeaders, timeoutMs: number): Promise<number> {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(incoming)) if (v !== undefined && !NOT_FORWARDED.has(k)) headers[k] = v;
  for (const h of a.httpHeaders ?? []) delete headers[h.name.toLowerCase()];
  for (const h of a.httpHeaders ?? []) headers[h.name.toLowerCase() === ':authority' ? 'host' : h.name.toLowerCase()] = h.value;
  const secure = a.scheme?.toUpperCase() === 'HTTPS';
  const path = a.path === undefined || a.path === '' ? '/' : a.path.startsWith('/') ? a.path : `/${a.path}`;
  const local = sourceFor(dest);
  return new Promise((resolve) => {
    const req = (secure ? https : http).request(
      // The kubelet does not verify an HTTPS probe's certificate; neither does pilot-agent.
      {
        host: dest,
        port: a.port,
        path,
        method: 'GET',
        headers,
        timeout: timeoutMs,
        agent: false,
        ...(local ? { localAddress: local } : {}),
        ...(secure ? { rejectUnauthorized: false } : {}),
      },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 500;
        // A redirect has no Location to give back to the kubelet: pilot-agent answers 200.
        resolve(code >= 300 && code < 400 ? 200 : code);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(500));
    req.end();
  });
}

function tcpProbe(port: number, dest: string, timeoutMs: number): Promise<number> {
  const local = sourceFor(dest);
  return new Promise((resolve) => {
    const s = connect({ host: dest, port, timeout: timeoutMs, ...(local ? { localAddress: local } : {}) });
    s.once('connect', () => {
      s.destroy();
      resolve(200);
    });
    s.once('timeout', () => s.destroy(new Error('timed out')));
    s.once('error', () => resolve(500));
  });
}

/** grpc.health.v1.Health/Check by hand: HealthCheckRequest{service=1} and HealthCheckResponse{status=1}. */
function encodeHealthRequest(service: string): Buffer {
  const s = Buffer.from(service, 'utf8');
  if (s.length === 0) return Buffer.alloc(0);
  if (s.length > 127) throw new MeshError('INVALID_ARGUMENT', `gRPC health service name is too long (${s.length} bytes)`);
  return Buffer.concat([Buffer.from([0x0a, s.length]), s]);
}

function decodeHealthStatus(b: Buffer): number {
  for (let i = 0; i + 1 < b.length; i += 2) if (b[i] === 0x08) return b[i + 1]!;
  return 0;
}

const SERVING = 1;

function grpcProbe(
  g: { port: number; service?: string },
  dest: string,
  incoming: http.IncomingHttpHeaders,
  timeoutMs: number,
): Promise<number> {
  const target = isIP(dest) === 6 ? `[${dest}]:${g.port}` : `${dest}:${g.port}`;
  const ua = incoming['user-agent'];
  const client = new Client(target, credentials.createInsecure(), ua ? { 'grpc.primary_user_agent': ua } : {});
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (req: string) => encodeHealthRequest(req),
      decodeHealthStatus,
      g.service ?? '',
      new Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, status) => {
        client.close();
        // Not serving, no health service (UNIMPLEMENTED), too slow: all fail the probe, as for the kubelet.
        resolve(!err && status === SERVING ? 200 : 500);
      },
    );
  });
}

/** Runs one probe against the app at `dest` (the pod IP); the status code the status server answers with. */
export function runAppProbe(p: AppProber, dest: string, incoming: http.IncomingHttpHeaders): Promise<number> {
  // The kubelet's default probe timeout.
  const timeoutMs = (p.timeoutSeconds && p.timeoutSeconds > 0 ? p.timeoutSeconds : 1) * 1000;
  if (p.httpGet) return httpProbe(p.httpGet, dest, incoming, timeoutMs);
  if (p.tcpSocket) return tcpProbe(p.tcpSocket.port, dest, timeoutMs);
  return grpcProbe(p.grpc!, dest, incoming, timeoutMs);
}
