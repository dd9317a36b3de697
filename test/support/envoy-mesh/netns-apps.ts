/**
 * The echo app and the load client of the Envoy mesh tests as child processes inside a network
 * namespace (`ip netns exec`), speaking JSON lines over stdio (see echo-app.mjs, http-client.mjs).
 * Both run as root, never as the proxy's uid, so the namespace's capture rules apply to them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Netns } from '../cni/netns.js';
import { terminate, trackChild } from '../cleanup.js';

const ECHO_APP = fileURLToPath(new URL('./echo-app.mjs', import.meta.url));
const HTTP_CLIENT = fileURLToPath(new URL('./http-client.mjs', import.meta.url));

/** What the echo app saw of one request. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly host: string;
  /** The app port the request arrived on. */
  readonly port: number;
  readonly httpVersion: string;
  readonly headers: Readonly<Record<string, string>>;
}

export interface Sample {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What a batch of requests got. */
export interface Tally {
  readonly n: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Which backend answered (the echo app's name), else `status <code>` for Envoy's own answers. */
  readonly by: Readonly<Record<string, number>>;
  /** Connection-level failures by code (ECONNRESET, TIMEOUT …). */
  readonly errors: Readonly<Record<string, number>>;
  readonly samples: readonly Sample[];
  readonly elapsedMs: number;
}

export interface RequestBatch {
  readonly url: string;
  readonly n: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly method?: string;
  readonly concurrency?: number;
  readonly timeoutMs?: number;
  /** A new connection per request (no keep-alive): what a TCP service routes, connection by connection. */
  readonly newConnections?: boolean;
}

interface JsonChild {
  readonly child: ChildProcess;
  /** Lines after the ready line, parsed, in order. */
  readonly lines: Record<string, unknown>[];
  stderr(): string;
  onLine(f: (o: Record<string, unknown>) => void): void;
}

async function startJsonChild(ns: Netns, script: string, args: readonly string[]): Promise<JsonChild> {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  trackChild(child);
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const lines: Record<string, unknown>[] = [];
  const listeners: ((o: Record<string, unknown>) => void)[] = [];
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o.ready === true) return resolve();
      lines.push(o);
      for (const f of listeners) f(o);
    });
    child.once('exit', (code) => reject(new Error(`${script} in ${ns.name} exited (${code}): ${err}`)));
  });
  return { child, lines, stderr: () => err, onLine: (f) => listeners.push(f) };
}

export interface EchoApp {
  readonly name: string;
  /** Every request the app got so far. */
  readonly seen: readonly SeenRequest[];
  stop(): Promise<void>;
}

/** Starts the echo app in `ns` on 0.0.0.0 at `ports`, resolving once it listens on all. */
export async function startEchoApp(ns: Netns, name: string, version: string, ports: readonly number[]): Promise<EchoApp> {
  const c = await startJsonChild(ns, ECHO_APP, [name, version, ports.join(',')]);
  const seen: SeenRequest[] = [];
  c.onLine((o) => seen.push(o.seen as SeenRequest));
  return {
    name,
    seen,
    stop: async () => {
      c.child.stdin?.end();
      await terminate(c.child, 2000);
    },
  };
}

export interface HttpClient {
  /** Sends `batch.n` requests from inside the namespace and tallies the answers. */
  run(batch: RequestBatch): Promise<Tally>;
  stop(): Promise<void>;
}

/** Starts the load client in `ns`; batches run one at a time. */
export async function startHttpClient(ns: Netns): Promise<HttpClient> {
  const c = await startJsonChild(ns, HTTP_CLIENT, []);
  const pending: ((t: Tally) => void)[] = [];
  c.onLine((o) => pending.shift()?.(o as unknown as Tally));
  let chain: Promise<unknown> = Promise.resolve();
  return {
    run(batch) {
      const result = chain.then(
        () =>
          new Promise<Tally>((resolve, reject) => {
            if (c.child.exitCode !== null) return reject(new Error(`client in ${ns.name} is gone: ${c.stderr()}`));
            pending.push(resolve);
            c.child.stdin!.write(`${JSON.stringify(batch)}\n`);
          }),
      );
      chain = result.catch(() => undefined);
      return result;
    },
    stop: async () => {
      c.child.stdin?.end();
      await terminate(c.child, 2000);
    },
  };
}
