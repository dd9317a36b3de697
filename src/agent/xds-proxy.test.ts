import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { createLogger } from '../util/log.js';
import type { WorkloadSecret } from './cert-manager.js';
import { startXdsProxy, type XdsProxy } from './xds-proxy.js';
import { AdsTestClient, adsTestDefinition, createTestCa, firstAdsReply, type TestCa } from './test-support.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const ISTIOD = 'istiod.istio-system.svc';

/** A control plane stand-in: echoes the node id and the client certificate's SAN; type "deny" is refused. */
async function startUpstream(creds: grpc.ServerCredentials): Promise<{ addr: string; server: grpc.Server }> {
  const server = new grpc.Server();
  const peer = (call: grpc.ServerDuplexStream<unknown, unknown>): string =>
    call.getAuthContext().sslPeerCertificate?.subjectaltname ?? 'no-client-cert';
  server.addService(adsTestDefinition, {
    StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, unknown>) => {
      call.on('data', (req: DiscoveryRequest) => {
        if (req.typeUrl === 'deny') return call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'denied by test' });
        call.write(create(DiscoveryResponseSchema, { versionInfo: `${req.node?.id}|${peer(call)}`, typeUrl: req.typeUrl, nonce: 'n1' }));
      });
      call.on('end', () => call.end());
    },
    DeltaAggregatedResources: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, unknown>) => {
      call.on('data', (req: DeltaDiscoveryRequest) =>
        call.write(create(DeltaDiscoveryResponseSchema, { systemVersionInfo: `delta|${peer(call)}`, typeUrl: req.typeUrl, nonce: 'd1' })),
      );
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { addr: `127.0.0.1:${port}`, server };
}

const sotwRequest = (typeUrl = 'type.googleapis.com/envoy.config.cluster.v3.Cluster') =>
  create(DiscoveryRequestSchema, { node: { id: 'sidecar~10.0.0.7~client.foo~foo.svc.cluster.local' }, typeUrl });

describe('ADS proxy', () => {
  let dir: string;
  let ca: TestCa;
  let secret: WorkloadSecret;
  const logs: string[] = [];
  const log = createLogger({ level: 'debug', sink: (l) => logs.push(l) });
  const cleanups: (() => Promise<void> | void)[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-xdsproxy-'));
    ca = await createTestCa({ identity: ID });
    const issued = await ca.issue([ID]);
    secret = {
      ...issued,
      rootCertPem: ca.rootPem,
      identity: ID,
      serial: '1',
      createdAt: Date.now(),
      expiresAt: Date.now() + 86_400_000,
      version: 1,
    };
  });
  after(async () => {
    for (const c of cleanups.reverse()) await c();
    await rm(dir, { recursive: true, force: true });
  });

  async function proxyTo(
    addr: string,
    transport: 'tls' | 'plaintext',
    name: string,
  ): Promise<{ proxy: XdsProxy; client: grpc.Client; socket: string }> {
    const socket = path.join(dir, name, 'XDS');
    const proxy = await startXdsProxy({
      socketPath: socket,
      upstreamAddr: addr,
      transport,
      rootCertPem: () => Promise.resolve(ca.rootPem),
      serverName: ISTIOD,
      workloadSecret: () => Promise.resolve(secret),
      log,
    });
    const client = new AdsTestClient(`unix:${socket}`, grpc.credentials.createInsecure());
    cleanups.push(
      () => client.close(),
      () => proxy.stop(),
    );
    return { proxy, client, socket };
  }

  it('relays SotW and Delta streams to a plaintext control plane', async () => {
    const up = await startUpstream(grpc.ServerCredentials.createInsecure());
    cleanups.push(() => void up.server.forceShutdown());
    const { client, socket } = await proxyTo(up.addr, 'plaintext', 'plain');
    assert.equal((await stat(socket)).mode & 0o777, 0o600);
    const r = await firstAdsReply(client, 'StreamAggregatedResources', sotwRequest());
    assert.equal(r.versionInfo, 'sidecar~10.0.0.7~client.foo~foo.svc.cluster.local|no-client-cert');
    const d = await firstAdsReply(client, 'DeltaAggregatedResources', create(DeltaDiscoveryRequestSchema, { typeUrl: 'x' }));
    assert.equal(d.systemVersionInfo, 'delta|no-client-cert');
  });

  it('presents the workload certificate over mTLS and checks the control plane against the root and istiod SAN', async () => {
    const serving = await ca.issue([ISTIOD]);
    const creds = grpc.ServerCredentials.createSsl(
      Buffer.from(ca.rootPem),
      [{ private_key: Buffer.from(serving.privateKeyPem), cert_chain: Buffer.from(serving.certChainPem) }],
      true,
    );
    const up = await startUpstream(creds);
    cleanups.push(() => void up.server.forceShutdown());
    const { client } = await proxyTo(up.addr, 'tls', 'tls');
    const r = await firstAdsReply(client, 'StreamAggregatedResources', sotwRequest());
    assert.equal(r.versionInfo, `sidecar~10.0.0.7~client.foo~foo.svc.cluster.local|URI:${ID}`);
  });

  it('refuses a control plane whose certificate is not for the istiod SAN', async () => {
    const serving = await ca.issue(['evil.example.com']);
    const creds = grpc.ServerCredentials.createSsl(
      Buffer.from(ca.rootPem),
      [{ private_key: Buffer.from(serving.privateKeyPem), cert_chain: Buffer.from(serving.certChainPem) }],
      true,
    );
    const up = await startUpstream(creds);
    cleanups.push(() => void up.server.forceShutdown());
    const { client } = await proxyTo(up.addr, 'tls', 'wrong-san');
    await assert.rejects(
      firstAdsReply(client, 'StreamAggregatedResources', sotwRequest()),
      (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
    );
  });

  it('passes the control plane status through to the client', async () => {
    const up = await startUpstream(grpc.ServerCredentials.createInsecure());
    cleanups.push(() => void up.server.forceShutdown());
    const { client } = await proxyTo(up.addr, 'plaintext', 'status');
    await assert.rejects(
      firstAdsReply(client, 'StreamAggregatedResources', sotwRequest('deny')),
      (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === 'denied by test',
    );
    assert.ok(logs.some((l) => l.includes('control plane closed an ADS stream') && l.includes('PERMISSION_DENIED')));
  });
});
