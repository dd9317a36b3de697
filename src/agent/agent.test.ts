import assert from 'node:assert/strict';
import { access, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { create, fromJson, type JsonValue } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { BootstrapSchema } from '../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { SecretSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { createLogger } from '../util/log.js';
import { xdsJsonRegistry } from '../model/json-registry.js';
import { TypeUrl } from '../xds/type-urls.js';
import { startAgent } from './agent.js';
import { parseAgentOptions } from './options.js';
import { sdsServiceDefinition } from './sds-server.js';
import { AdsTestClient, adsTestDefinition, createTestCa, firstAdsReply, type TestCa } from './test-support.js';
import { FakeClock } from '../../test/fake-clock.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
async function waitUntil(cond: () => boolean): Promise<void> {
  // Generous: a renewal is a key generation and a CSR round trip, slow on a loaded machine.
  const deadline = Date.now() + 30_000;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
  assert.ok(cond(), 'condition not reached');
}

describe('startAgent', () => {
  let dir: string;
  let ca: TestCa;
  const logs: string[] = [];
  const log = createLogger({ level: 'debug', sink: (l) => logs.push(l) });
  const common = (sub: string): string[] => [
    '--xdsAddr',
    '127.0.0.1:1',
    '--xdsTransport',
    'plaintext',
    '--podName',
    'client-0',
    '--namespace',
    'foo',
    '--serviceAccount',
    'client',
    '--podIp',
    '10.0.0.7',
    '--xdsSocket',
    path.join(dir, sub, 'XDS'),
    '--tokenFile',
    path.join(dir, 'token'),
    // Bootstrap only: no Envoy to run here, and no status server on the shared 15020.
    '--runEnvoy',
    'false',
    '--statusPort',
    '0',
  ];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-start-'));
    ca = await createTestCa({ identity: ID });
    await writeFile(path.join(dir, 'token'), 'header.payload.signature\n');
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('proxyless: writes the cert files, then a bootstrap naming them and the ADS proxy socket', async () => {
    const out = path.join(dir, 'grpc', 'certs');
    const file = path.join(dir, 'grpc', 'bootstrap.json');
    const opts = parseAgentOptions([...common('grpc'), '--mode', 'grpc', '--outputDir', out, '--grpcBootstrap', file], {});
    const agent = await startAgent(opts, log, { signer: ca.signer });
    try {
      const secret = await agent.ready;
      assert.equal(secret.identity, ID);
      assert.equal(await readFile(path.join(out, 'cert-chain.pem'), 'utf8'), secret.certChainPem);
      assert.equal((await stat(path.join(out, 'key.pem'))).mode & 0o777, 0o600);
      assert.deepEqual(
        ca.requests.map((r) => r.auth),
        ['token'],
      );
      const b = JSON.parse(await readFile(file, 'utf8')) as {
        xds_servers: { server_uri: string }[];
        node: { id: string; metadata: Record<string, unknown> };
        certificate_providers: Record<string, { config: Record<string, string> }>;
      };
      assert.equal(b.xds_servers[0]?.server_uri, `unix://${path.join(dir, 'grpc', 'XDS')}`);
      assert.equal(b.node.id, 'sidecar~10.0.0.7~client-0.foo~foo.svc.cluster.local');
      assert.equal(b.node.metadata.GENERATOR, 'grpc');
      assert.equal(b.certificate_providers.default?.config.private_key_file, path.join(out, 'key.pem'));
      assert.ok((await stat(path.join(dir, 'grpc', 'XDS'))).isSocket());
    } finally {
      await agent.stop();
    }
    assert.equal(await exists(path.join(dir, 'grpc', 'XDS')), false, 'the socket is removed on stop');
  });

  it('Envoy: serves the workload secret over SDS and writes a Bootstrap pointing at both sockets', async () => {
    const file = path.join(dir, 'envoy', 'envoy-rev.json');
    const sdsSocket = path.join(dir, 'envoy', 'sds', 'socket');
    const opts = parseAgentOptions([...common('envoy'), '--sdsSocket', sdsSocket, '--envoyBootstrap', file], {});
    const agent = await startAgent(opts, log, { signer: ca.signer });
    const Client = grpc.makeGenericClientConstructor(sdsServiceDefinition, 'SDS');
    const client = new Client(`unix:${sdsSocket}`, grpc.credentials.createInsecure());
    try {
      const secret = await agent.ready;
      const b = fromJson(BootstrapSchema, JSON.parse(await readFile(file, 'utf8')) as JsonValue, { registry: xdsJsonRegistry() });
      const pipes = b.staticResources?.clusters.map((c) => {
        const h = c.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
        return h?.case === 'endpoint' && h.value.address?.address.case === 'pipe'
          ? `${c.name}=${h.value.address.address.value.path}`
          : undefined;
      });
      assert.ok(pipes?.includes(`sds-grpc=${sdsSocket}`));
      assert.ok(pipes?.includes(`xds-grpc=${path.join(dir, 'envoy', 'XDS')}`));
      const response = await new Promise<DiscoveryResponse>((resolve, reject) => {
        const call = (
          client as unknown as { StreamSecrets(): grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> }
        ).StreamSecrets();
        call.on('data', (r: DiscoveryResponse) => {
          resolve(r);
          call.cancel();
        });
        call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
        call.write(create(DiscoveryRequestSchema, { node: { id: b.node!.id }, resourceNames: ['default'], typeUrl: TypeUrl.Secret }));
      });
      const s = anyUnpack(response.resources[0]!, SecretSchema);
      const chain = s?.type.case === 'tlsCertificate' ? s.type.value.certificateChain?.specifier : undefined;
      assert.equal(chain?.case === 'inlineBytes' && Buffer.from(chain.value).toString(), secret.certChainPem);
      assert.equal(await exists(path.join(dir, 'envoy', 'certs')), false, 'no cert files without OUTPUT_CERTS');
    } finally {
      client.close();
      await agent.stop();
    }
  });

  it('the ADS proxy presents the newest certificate on every new upstream connection', async () => {
    const clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
    // The CA dates certificates by real time (the upstream checks them by real time); only the agent's schedule is fake.
    const rotating = await createTestCa({ identity: ID });
    const serving = await rotating.issue(['istiod.istio-system.svc']);
    // A control plane stand-in that answers every stream with the serial of the client certificate.
    const upstream = new grpc.Server();
    upstream.addService(adsTestDefinition, {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        call.on('data', () =>
          call.write(create(DiscoveryResponseSchema, { versionInfo: call.getAuthContext().sslPeerCertificate?.serialNumber ?? 'none' })),
        );
        call.on('end', () => call.end());
      },
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<unknown, unknown>) => call.end(),
    });
    const creds = grpc.ServerCredentials.createSsl(
      Buffer.from(rotating.rootPem),
      [{ private_key: Buffer.from(serving.privateKeyPem), cert_chain: Buffer.from(serving.certChainPem) }],
      true,
    );
    const port = await new Promise<number>((resolve, reject) =>
      upstream.bindAsync('127.0.0.1:0', creds, (e, p) => (e ? reject(e) : resolve(p))),
    );
    const rootFile = path.join(dir, 'mesh-root.pem');
    await writeFile(rootFile, rotating.rootPem);
    const args = [
      ...common('rotate'),
      '--xdsAddr',
      `127.0.0.1:${port}`,
      '--xdsTransport',
      'tls',
      '--xdsRootCert',
      rootFile,
      '--sdsSocket',
      path.join(dir, 'rotate', 'sds'),
      '--envoyBootstrap',
      path.join(dir, 'rotate', 'envoy.json'),
      '--secretGracePeriodRatioJitter',
      '0',
    ];
    const agent = await startAgent(parseAgentOptions(args, {}), log, { signer: rotating.signer, clock });
    const client = new AdsTestClient(`unix:${path.join(dir, 'rotate', 'XDS')}`, grpc.credentials.createInsecure());
    const req = create(DiscoveryRequestSchema, { typeUrl: TypeUrl.Cluster });
    try {
      clock.advance(0);
      const first = await agent.ready;
      assert.equal((await firstAdsReply(client, 'StreamAggregatedResources', req)).versionInfo?.toLowerCase(), first.serial.toLowerCase());
      // Past half of the default 24 h: renewal is due at createdAt (fake clock) + half the lifetime up
      // to notAfter (real time), i.e. a little after 12 h when issuance lagged the fake clock's start.
      clock.advance(13 * 3_600_000);
      await waitUntil(() => agent.certs.current()?.version === 2);
      const second = agent.certs.current()!;
      assert.equal((await firstAdsReply(client, 'StreamAggregatedResources', req)).versionInfo?.toLowerCase(), second.serial.toLowerCase());
    } finally {
      client.close();
      await agent.stop();
      upstream.forceShutdown();
    }
  });

  it('refuses to start without the CA root it must trust', async () => {
    const opts = parseAgentOptions([...common('noroot'), '--caRootCert', path.join(dir, 'missing.pem')], {});
    await assert.rejects(startAgent(opts, log), /CA root certificate \(--caRootCert\) .*missing\.pem/);
  });

  it('never logs key material', () => {
    assert.ok(logs.length > 0);
    for (const l of logs) {
      assert.doesNotMatch(l, /PRIVATE KEY/);
      assert.ok(!l.includes('header.payload.signature'), 'nor the token');
    }
  });
});
