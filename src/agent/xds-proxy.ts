/**
 * The agent's local ADS proxy (Istio: ./etc/istio/proxy/XDS): Envoy or proxyless gRPC dials a Unix
 * socket without credentials; every stream is relayed byte for byte to the control plane over a
 * connection of its own — mTLS with the workload certificate current when the stream opened (15012),
 * or plaintext (15010). Statuses travel back unchanged, so the client sees istiod's errors and
 * reconnects as it would directly.
 */
import * as grpc from '@grpc/grpc-js';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { ADS_SERVICE } from '../xds/ads-service.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { controlPlaneChannel } from './ca-client.js';
import type { WorkloadSecret } from './cert-manager.js';
import type { XdsSideChannel } from './dns/name-table-channel.js';
import type { XdsTransport } from './options.js';
import { shutdownServer } from './sds-server.js';

const raw = (b: Buffer): Buffer => b;
const rawMethod = (name: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path: `/${ADS_SERVICE}/${name}`,
  requestStream: true,
  responseStream: true,
  requestSerialize: raw,
  requestDeserialize: raw,
  responseSerialize: raw,
  responseDeserialize: raw,
});
const METHODS = ['StreamAggregatedResources', 'DeltaAggregatedResources'] as const;

// xDS responses for a large mesh exceed gRPC's 4 MiB default; the proxy must not be the bottleneck.
const UNLIMITED = { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 };

export interface XdsProxyOptions {
  readonly socketPath: string;
  readonly upstreamAddr: string;
  readonly transport: XdsTransport;
  /** Roots for the control plane's serving certificate (TLS only; read per stream); default: the workload trust bundle. */
  readonly rootCertPem?: () => Promise<string>;
  readonly serverName: string;
  /** The workload certificate to present; waits for the first one. */
  readonly workloadSecret: () => Promise<WorkloadSecret>;
  readonly log: Logger;
  /**
   * Rewrites a control-plane response before the client sees it (Wasm modules: ECDS configs
   * pointed at local files). Responses stay in order; a stream's end waits for them.
   */
  readonly rewriteResponse?: (bytes: Buffer, delta: boolean) => Promise<Buffer>;
  /** Types the agent asks for and consumes itself on the relayed streams (the DNS name table). */
  readonly sideChannel?: XdsSideChannel;
}

export interface XdsProxy {
  /** Downstream streams being relayed. */
  streams(): number;
  /**
   * The workload's health report (HealthInformation requests): sent on every relayed stream now and
   * on each new one after its first request (the control plane knows the node by then), as
   * istio-agent does.
   */
  setHealth(requests: { readonly sotw: Buffer; readonly delta: Buffer }): void;
  stop(): Promise<void>;
}

export async function startXdsProxy(o: XdsProxyOptions): Promise<XdsProxy> {
  const abs = path.resolve(o.socketPath);
  const clients = new Set<grpc.Client>();
  let health: { readonly sotw: Buffer; readonly delta: Buffer } | undefined;
  /** Streams that forwarded their first request: each writes a health report upstream. */
  const reporting = new Set<(b: Buffer, delta: boolean) => void>();

  const upstreamClient = async (): Promise<grpc.Client> => {
    if (o.transport === 'plaintext') return new grpc.Client(o.upstreamAddr, grpc.credentials.createInsecure(), UNLIMITED);
    const secret = await o.workloadSecret();
    const { credentials, options } = controlPlaneChannel({
      rootCertPem: o.rootCertPem ? await o.rootCertPem() : secret.rootCertPem,
      serverName: o.serverName,
      clientCertChainPem: secret.certChainPem,
      clientKeyPem: secret.privateKeyPem,
    });
    return new grpc.Client(o.upstreamAddr, credentials, { ...options, ...UNLIMITED });
  };

  const relay = (method: grpc.MethodDefinition<Buffer, Buffer>) => (down: grpc.ServerDuplexStream<Buffer, Buffer>) => {
    const pending: Buffer[] = [];
    const delta = method.path.endsWith('/DeltaAggregatedResources');
    const rewrite = o.rewriteResponse;
    // Responses pass through the rewrite one at a time, in order.
    let forwarded: Promise<void> = Promise.resolve();
    const forward = (b: Buffer): void => {
      if (!rewrite) return void down.write(b);
      forwarded = forwarded
        .then(() => rewrite(b, delta).catch(() => b))
        .then((out) => {
          if (!closed) down.write(out);
        });
    };
    let up: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
    let client: grpc.Client | undefined;
    let downEnded = false;
    let closed = false;
    const release = (): void => {
      closed = true;
      reporting.delete(report);
      if (client) {
        client.close();
        clients.delete(client);
      }
    };
    const tap = o.sideChannel?.openStream(delta);
    const toUpstream = (b: Buffer): void => void (up ? up.write(b) : pending.push(b));
    const report = (b: Buffer, forDelta: boolean): void => {
      if (forDelta === delta && !closed) toUpstream(b);
    };
    down.on('data', (b: Buffer) => {
      toUpstream(b);
      for (const extra of tap?.afterRequest(b) ?? []) toUpstream(extra);
      if (reporting.has(report)) return;
      reporting.add(report);
      if (health) toUpstream(delta ? health.delta : health.sotw);
    });
    down.on('close', () => reporting.delete(report));
    down.on('end', () => {
      downEnded = true;
      up?.end();
    });
    down.on('cancelled', () => {
      up?.cancel();
      release();
    });
    down.on('error', () => release());
    upstreamClient().then(
      (c) => {
        if (closed) return void c.close();
        client = c;
        clients.add(c);
        const stream = c.makeBidiStreamRequest(method.path, raw, raw, new grpc.Metadata());
        up = stream;
        for (const b of pending.splice(0)) stream.write(b);
        if (downEnded) stream.end();
        stream.on('data', (b: Buffer) => {
          const ack = tap?.consume(b);
          if (ack) stream.write(ack);
          else forward(b);
        });
        stream.on('error', () => {}); // reported through 'status'
        stream.on(
          'status',
          (st: grpc.StatusObject) =>
            void forwarded.then(() => {
              if (!closed) {
                if (st.code === grpc.status.OK) down.end();
                else {
                  o.log.warn('control plane closed an ADS stream', {
                    method: method.path,
                    code: grpc.status[st.code],
                    details: st.details,
                  });
                  down.emit('error', { code: st.code, details: st.details, metadata: st.metadata });
                }
              }
              release();
            }),
        );
      },
      (err: unknown) => {
        o.log.error('cannot open an ADS stream to the control plane', { error: errorMessage(err) });
        if (!closed) down.emit('error', { code: grpc.status.UNAVAILABLE, details: `agent: ${errorMessage(err)}` });
        release();
      },
    );
  };

  let open = 0;
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  const impl: grpc.UntypedServiceImplementation = {};
  for (const name of METHODS) {
    const method = rawMethod(name);
    const handler = relay(method);
    definition[name] = method;
    impl[name] = (down: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      open++;
      let counted = true;
      const gone = (): void => {
        if (counted) open--;
        counted = false;
      };
      down.on('close', gone);
      down.on('cancelled', gone);
      handler(down);
    };
  }
  const server = new grpc.Server(UNLIMITED);
  server.addService(definition, impl);

  await mkdir(path.dirname(abs), { recursive: true });
  await rm(abs, { force: true });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${abs}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  await chmod(abs, 0o600);
  o.log.info('ADS proxy listening', { socket: abs, upstream: o.upstreamAddr, transport: o.transport });
  return {
    streams: () => open,
    setHealth(requests) {
      health = requests;
      for (const send of reporting) {
        send(requests.sotw, false);
        send(requests.delta, true);
      }
    },
    async stop() {
      for (const c of clients) c.close();
      clients.clear();
      await shutdownServer(server);
      await rm(abs, { force: true });
    },
  };
}
