import { randomBytes } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { errorMessage } from '../util/errors.js';

/**
 * `--run-validation`, the istio-validation init container's check that the CNI plugin captured
 * the pod (Istio: tools/istio-iptables/pkg/validation). Listeners on the loopback address at the
 * outbound and inbound capture ports; a client connects to 127.0.0.6 (::6 for an IPv6 pod) at the
 * probe port, where nothing listens: only a REDIRECT can deliver that connection to a listener.
 *
 * Istio's server reads SO_ORIGINAL_DST and waits for the probe port. Node cannot call that
 * getsockopt, so the client sends a random token instead: a listener that receives the token
 * proves the connection to 127.0.0.6:<probe port> was redirected to it. Like Istio, the client
 * retries once a second until the timeout.
 */

export interface ValidationOptions {
  /** -p: the outbound capture port. */
  readonly proxyPort: number;
  /** -z: the inbound capture port (a uid-1337 process's loopback traffic is redirected here). */
  readonly inboundCapturePort: number;
  /** --iptables-probe-port (IPTABLES_PROBE_PORT), default 15002. */
  readonly probePort: number;
  /** --probe-timeout (PROBE_TIMEOUT), default 5 s. */
  readonly timeoutMs: number;
  /** Istio's HostIP.Is6(): the pod's first non-loopback, non-link-local address is IPv6. */
  readonly ipv6: boolean;
  readonly retryIntervalMs?: number;
}

export type ValidationOutcome =
  | { readonly ok: true; readonly probe: string; readonly redirectedTo: string }
  | { readonly ok: false; readonly probe: string; readonly reason: string };

export const DEFAULT_PROBE_PORT = 15002;
export const DEFAULT_PROBE_TIMEOUT_MS = 5000;
/** Istio's constants.ValidationErrorCode: the exit code when the capture is not in place. */
export const VALIDATION_EXIT_CODE = 126;

/** Istio's text, so operators recognise it (root.go). */
export const VALIDATION_FAILED_MESSAGE = `iptables validation failed; workload is not ready for Istio.
When using Istio CNI, this can occur if a pod is scheduled before the node is ready.

If installed with 'cni.repair.deletePods=true', this pod should automatically be deleted and retry.
Otherwise, this pod will need to be manually removed so that it is scheduled on a node with istio-cni running, allowing iptables rules to be established.`;

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function listen(host: string, port: number, onToken: (socket: Socket) => void, token: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      let got = '';
      socket.setEncoding('utf8');
      socket.on('error', () => socket.destroy());
      socket.on('data', (d: string) => {
        got += d;
        if (!got.includes('\n')) {
          if (got.length > 256) socket.destroy();
          return;
        }
        // Echo where the connection arrived, for whoever debugs with nc (Istio echoes the port).
        socket.end(String(socket.localPort));
        if (got.trim() === token) onToken(socket);
      });
    });
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** One probe connection; resolves with the error code or message ('' when it connected and wrote). */
function probeOnce(host: string, port: number, localAddress: string, token: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port, localAddress, timeout: timeoutMs });
    s.on('connect', () => {
      s.end(`${token}\n`);
      resolve('');
    });
    s.on('data', () => undefined);
    s.on('timeout', () => {
      s.destroy();
      resolve('connect timed out');
    });
    s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? errorMessage(e)));
  });
}

export async function validateRedirect(opts: ValidationOptions): Promise<ValidationOutcome> {
  const listenIp = opts.ipv6 ? '::1' : '127.0.0.1';
  const serverIp = opts.ipv6 ? '::6' : '127.0.0.6';
  const probe = hostPort(serverIp, opts.probePort);
  const token = randomBytes(16).toString('hex');
  let redirectedTo: string | undefined;
  const servers: Server[] = [];
  const listenErrors: string[] = [];
  for (const port of new Set([opts.proxyPort, opts.inboundCapturePort])) {
    try {
      servers.push(await listen(listenIp, port, (s) => (redirectedTo ??= hostPort(listenIp, s.localPort ?? port)), token));
    } catch (err) {
      listenErrors.push(`${hostPort(listenIp, port)}: ${errorMessage(err)}`);
    }
  }
  try {
    if (servers.length === 0) return { ok: false, probe, reason: `no listener available: ${listenErrors.join('; ')}` };
    const deadline = Date.now() + opts.timeoutMs;
    const attempts: string[] = [];
    while (redirectedTo === undefined && Date.now() < deadline) {
      const result = await probeOnce(serverIp, opts.probePort, listenIp, token, Math.max(1, Math.min(1000, deadline - Date.now())));
      // The listener sees the token a moment after the client wrote it.
      for (let i = 0; i < 20 && redirectedTo === undefined && result === ''; i++) await new Promise((r) => setTimeout(r, 10));
      if (redirectedTo !== undefined) break;
      attempts.push(result === '' ? 'connected, but not to a validation listener' : result);
      const pause = Math.min(opts.retryIntervalMs ?? 1000, deadline - Date.now());
      if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    }
    if (redirectedTo !== undefined) return { ok: true, probe, redirectedTo };
    const listening = servers.map((s) => {
      const a = s.address();
      return typeof a === 'object' && a !== null ? hostPort(a.address, a.port) : String(a);
    });
    const last = attempts.at(-1) ?? 'no attempt';
    return {
      ok: false,
      probe,
      reason: `validation timeout after ${opts.timeoutMs} ms: ${attempts.length} connection(s) to ${probe} never reached ${listening.join(' or ')} (last: ${last}); the pod's traffic is not redirected`,
    };
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
