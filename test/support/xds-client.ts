import * as grpc from '@grpc/grpc-js';
import { register } from '@grpc/grpc-js-xds';
import { WHOAMI_PATH, type WhoamiReply } from './grpc-backend.js';
import { waitFor } from './wait.js';

export interface ProxylessNode {
  /** `sidecar~<ip>~<pod>.<ns>~<ns>.svc.cluster.local` */
  readonly id: string;
  readonly namespace: string;
}

/** A proxyless node identity as Istio's gRPC agent would produce it. */
export function proxylessNode(pod = 'client', namespace = 'default', ip = '127.0.0.1', domain = 'cluster.local'): ProxylessNode {
  return { id: `sidecar~${ip}~${pod}.${namespace}~${namespace}.svc.${domain}`, namespace };
}

/** The grpc-js-xds bootstrap pointing at one plaintext ADS server. */
export function xdsBootstrap(serverAddr: string, node: ProxylessNode): Record<string, unknown> {
  return {
    xds_servers: [{ server_uri: serverAddr, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    // grpc-js-xds fails every RPC when locality is absent (interop-notes.md).
    node: { id: node.id, metadata: { GENERATOR: 'grpc', NAMESPACE: node.namespace }, locality: {} },
  };
}

let installedBootstrap: string | undefined;

/**
 * Points this process's grpc-js-xds at `serverAddr` and registers the `xds:` scheme. grpc-js-xds
 * reads and caches its bootstrap once per process, so a test file uses one meshpilot server; a
 * second call with a different bootstrap throws rather than silently talking to the old server.
 */
export function useXdsBootstrap(serverAddr: string, node: ProxylessNode = proxylessNode()): void {
  const json = JSON.stringify(xdsBootstrap(serverAddr, node));
  if (installedBootstrap !== undefined) {
    if (installedBootstrap === json) return;
    throw new Error('grpc-js-xds bootstrap already set for this process (one meshpilot per test file)');
  }
  delete process.env.GRPC_XDS_BOOTSTRAP;
  process.env.GRPC_XDS_BOOTSTRAP_CONFIG = json;
  installedBootstrap = json;
  register();
}

export type CallResult =
  | { readonly ok: true; readonly backend: string; readonly reply: WhoamiReply }
  | { readonly ok: false; readonly code: grpc.status; readonly details: string };

export interface CallOptions {
  /** Request headers (gRPC metadata). */
  metadata?: Record<string, string>;
  /** Per-RPC deadline (default 5 s; grpc-js-xds does not fail fast while resolving). */
  deadlineMs?: number;
}

const channels = new Map<string, grpc.Client>();

function clientFor(target: string): grpc.Client {
  let c = channels.get(target);
  if (!c) {
    c = new grpc.Client(target, grpc.credentials.createInsecure());
    channels.set(target, c);
  }
  return c;
}

/** Closes every channel the helpers opened (call in `after`). */
export function closeXdsChannels(): void {
  for (const c of channels.values()) c.close();
  channels.clear();
}

const identity = (b: Buffer): Buffer => b;

/** The gRPC status code of a failed call's error, or undefined if it is not a gRPC error. */
export function grpcStatusOf(err: unknown): grpc.status | undefined {
  if (err !== null && typeof err === 'object' && 'code' in err && typeof err.code === 'number') return err.code as grpc.status;
  return undefined;
}

/** One Whoami RPC to `target` (e.g. `xds:///echo.default.svc.cluster.local:8080`). Never throws for RPC errors. */
export function callWhoami(target: string, opts: CallOptions = {}): Promise<CallResult> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(opts.metadata ?? {})) md.set(k, v);
  const deadline = Date.now() + (opts.deadlineMs ?? 5000);
  return new Promise<CallResult>((resolve) => {
    clientFor(target).makeUnaryRequest<Buffer, Buffer>(WHOAMI_PATH, identity, identity, Buffer.alloc(0), md, { deadline }, (err, res) => {
      if (err) {
        resolve({ ok: false, code: grpcStatusOf(err) ?? grpc.status.UNKNOWN, details: err.details ?? err.message });
        return;
      }
      try {
        const reply = JSON.parse((res ?? Buffer.alloc(0)).toString('utf8')) as WhoamiReply;
        resolve({ ok: true, backend: reply.backend, reply });
      } catch (e) {
        resolve({ ok: false, code: grpc.status.INTERNAL, details: `bad reply: ${(e as Error).message}` });
      }
    });
  });
}

export interface Tally {
  readonly total: number;
  /** Successful RPCs per backend name. */
  readonly counts: Readonly<Record<string, number>>;
  /** Failed RPCs per gRPC status code. */
  readonly errors: Readonly<Record<number, number>>;
  /** Distinct failure details seen (for messages). */
  readonly errorDetails: readonly string[];
}

/** Successful share of `backend` in percent of all RPCs in the tally. */
export function share(t: Tally, backend: string): number {
  return t.total === 0 ? 0 : (100 * (t.counts[backend] ?? 0)) / t.total;
}

export function failures(t: Tally): number {
  return Object.values(t.errors).reduce((a, b) => a + b, 0);
}

/** `n` Whoami RPCs (at most `concurrency` in flight, default 20); counts per backend and per error code. */
export async function callMany(target: string, n: number, opts: CallOptions & { concurrency?: number } = {}): Promise<Tally> {
  const counts: Record<string, number> = {};
  const errors: Record<number, number> = {};
  const details = new Set<string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      const r = await callWhoami(target, opts);
      if (r.ok) counts[r.backend] = (counts[r.backend] ?? 0) + 1;
      else {
        errors[r.code] = (errors[r.code] ?? 0) + 1;
        details.add(`${r.code} ${r.details}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency ?? 20, n) }, worker));
  return { total: n, counts, errors, errorDetails: [...details] };
}

/**
 * Repeats batches of `batch` RPCs until `pred(tally)` holds for one batch; returns that batch's
 * tally. For waiting until routing reflects a config change.
 */
export function waitForTally(
  target: string,
  batch: number,
  pred: (t: Tally) => boolean,
  opts: CallOptions & { timeoutMs?: number; description?: string } = {},
): Promise<Tally> {
  let last: Tally | undefined;
  return waitFor(
    async () => {
      last = await callMany(target, batch, opts);
      return pred(last) ? last : false;
    },
    {
      timeoutMs: opts.timeoutMs ?? 15_000,
      intervalMs: 20,
      description: opts.description ?? 'routing',
    },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last batch: ${JSON.stringify(last)}`);
  });
}
