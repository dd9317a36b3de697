/**
 * The demo client: a steady stream of gRPC calls to one service, through the Envoy sidecar's entry
 * listener (authority = the service host, as a captured request would carry) or, proxyless, to
 * `xds:///<host>` with grpc-js-xds. Answers are counted per second by the workload's service and
 * version.
 */
import * as grpc from '@grpc/grpc-js';
import { DEMO_METHOD, type DemoReply } from './apps.js';

export interface Second {
  /** `<service> <version>` → answers in the second. */
  readonly counts: ReadonlyMap<string, number>;
  readonly errors: number;
  /** The last error's message in the second, if any. */
  readonly lastError?: string;
}

export interface TrafficClient {
  /** The counts since the previous call (the demo calls it once a second). */
  take(): Second;
  close(): void;
}

export type ClientMode = { kind: 'envoy'; entry: string } | { kind: 'proxyless'; bootstrap: string };

async function channelFor(mode: ClientMode, host: string): Promise<grpc.Client> {
  if (mode.kind === 'envoy') {
    return new grpc.Client(mode.entry, grpc.credentials.createInsecure(), { 'grpc.default_authority': host });
  }
  process.env.GRPC_XDS_BOOTSTRAP_CONFIG = mode.bootstrap;
  // A dev dependency of meshpilot: present in a checkout, not in the npm package.
  const xds = (await import('@grpc/grpc-js-xds')) as { register(): void };
  xds.register();
  return new grpc.Client(`xds:///${host}`, grpc.credentials.createInsecure());
}

export async function startTraffic(mode: ClientMode, host: string, rps: number): Promise<TrafficClient> {
  const client = await channelFor(mode, host);
  let counts = new Map<string, number>();
  let errors = 0;
  let lastError: string | undefined;
  const send = (): void => {
    client.makeUnaryRequest<Buffer, Buffer>(
      DEMO_METHOD,
      (b) => b,
      (b) => b,
      Buffer.alloc(0),
      { deadline: Date.now() + 2000 },
      (err, reply) => {
        if (err || !reply) {
          errors++;
          lastError = err?.details ?? 'no reply';
          return;
        }
        try {
          const r = JSON.parse(reply.toString('utf8')) as DemoReply;
          const key = `${r.service} ${r.version}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        } catch {
          errors++;
          lastError = "an answer that is not the demo app's";
        }
      },
    );
  };
  const timer = setInterval(send, Math.max(1, Math.round(1000 / rps)));
  return {
    take() {
      const s: Second = { counts, errors, ...(lastError !== undefined ? { lastError } : {}) };
      counts = new Map();
      errors = 0;
      lastError = undefined;
      return s;
    },
    close() {
      clearInterval(timer);
      client.close();
    },
  };
}
