import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { callCreateCertificate } from '../security/csr/test-client.js';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../security/test-helpers.js';
import { ADS_SERVICE } from '../xds/ads-service.js';
import { TypeUrl } from '../xds/type-urls.js';
import { startDiscovery, type RunningDiscovery } from './discovery.js';
import { parseDiscoveryOptions } from './options.js';

const logs = captureLogs();
let dir: TempDir;
let env: Record<string, string>;
let running: RunningDiscovery;
let token = '';

const adsClientDefinition = {
  StreamAggregatedResources: {
    path: `/${ADS_SERVICE}/StreamAggregatedResources`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (m: DiscoveryRequest): Buffer => Buffer.from(toBinary(DiscoveryRequestSchema, m)),
    requestDeserialize: (b: Buffer): DiscoveryRequest => fromBinary(DiscoveryRequestSchema, b),
    responseSerialize: (m: DiscoveryResponse): Buffer => Buffer.from(toBinary(DiscoveryResponseSchema, m)),
    responseDeserialize: (b: Buffer): DiscoveryResponse => fromBinary(DiscoveryResponseSchema, b),
  },
  DeltaAggregatedResources: {
    path: `/${ADS_SERVICE}/DeltaAggregatedResources`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (m: DeltaDiscoveryRequest): Buffer => Buffer.from(toBinary(DeltaDiscoveryRequestSchema, m)),
    requestDeserialize: (b: Buffer): DeltaDiscoveryRequest => fromBinary(DeltaDiscoveryRequestSchema, b),
    responseSerialize: (m: DeltaDiscoveryResponse): Buffer => Buffer.from(toBinary(DeltaDiscoveryResponseSchema, m)),
    responseDeserialize: (b: Buffer): DeltaDiscoveryResponse => fromBinary(DeltaDiscoveryResponseSchema, b),
  },
} satisfies grpc.ServiceDefinition;
const AdsClient = grpc.makeGenericClientConstructor(adsClientDefinition, 'ADS');
const ADDRESS_TYPE = 'type.googleapis.com/istio.workload.Address';

/**
 * A Delta stream as ztunnel opens one: server-only TLS, `authorization: Bearer` and `clusterid`
 * metadata, a `ztunnel~` node with metadata NAMESPACE; the first response's type URL, or the error.
 */
function firstZtunnelDelta(bearer: string, namespace: string): Promise<{ typeUrl: string } | { code: grpc.status; details: string }> {
  const client = new AdsClient(running.secureGrpcAddress!, grpc.credentials.createSsl(Buffer.from(running.ca!.trustBundlePem())), {
    'grpc.ssl_target_name_override': 'istiod.istio-system.svc',
  });
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${bearer}`);
  md.set('clusterid', 'Kubernetes');
  const stream = (
    client as unknown as {
      DeltaAggregatedResources: (m: grpc.Metadata) => grpc.ClientDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>;
    }
  ).DeltaAggregatedResources(md);
  return new Promise((resolve) => {
    const done = (r: { typeUrl: string } | { code: grpc.status; details: string }): void => {
      resolve(r);
      stream.cancel();
      client.close();
    };
    stream.on('data', (r: DeltaDiscoveryResponse) => done({ typeUrl: r.typeUrl }));
    stream.on('error', (e: grpc.ServiceError) => done({ code: e.code, details: e.details }));
    stream.write(
      create(DeltaDiscoveryRequestSchema, {
        node: { id: `ztunnel~10.0.0.9~ztunnel-x.${namespace}~${namespace}.svc.cluster.local`, metadata: { NAMESPACE: namespace } },
        typeUrl: ADDRESS_TYPE,
      }),
    );
  });
}

async function start(): Promise<RunningDiscovery> {
  const argv = [
    '--configDir',
    dir.path,
    '--grpcAddr',
    '127.0.0.1:0',
    '--httpAddr',
    '127.0.0.1:0',
    '--monitoringAddr',
    '127.0.0.1:0',
    '--secureGRPCAddr',
    '127.0.0.1:0',
    '--httpsAddr',
    '127.0.0.1:0',
    '--shutdownDuration',
    '1s',
  ];
  return startDiscovery(parseDiscoveryOptions(argv, env), logs.logger);
}

/** One SotW CDS request over TLS: the first response's type URL, or the stream's error. */
function firstCds(
  creds: grpc.ChannelCredentials,
  nodeId = 'sidecar~10.0.0.1~a.foo~foo.svc.cluster.local',
): Promise<{ typeUrl: string } | { code: grpc.status; details: string }> {
  const client = new AdsClient(running.secureGrpcAddress!, creds, { 'grpc.ssl_target_name_override': 'istiod.istio-system.svc' });
  const md = new grpc.Metadata();
  const stream = (
    client as unknown as { StreamAggregatedResources: (m: grpc.Metadata) => grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> }
  ).StreamAggregatedResources(md);
  return new Promise((resolve) => {
    const done = (r: { typeUrl: string } | { code: grpc.status; details: string }): void => {
      resolve(r);
      stream.cancel();
      client.close();
    };
    stream.on('data', (r: DiscoveryResponse) => done({ typeUrl: r.typeUrl }));
    stream.on('error', (e: grpc.ServiceError) => done({ code: e.code, details: e.details }));
    stream.write(create(DiscoveryRequestSchema, { node: { id: nodeId }, typeUrl: TypeUrl.Cluster }));
  });
}

before(async () => {
  dir = await tempDir();
  const key = await generateKeyPair('ES256', { extractable: true });
  const jwks = await dir.file('jwks.json', JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k', alg: 'ES256' }] }));
  env = {
    JWT_RULE: JSON.stringify({ issuer: 'https://issuer.test', audiences: ['istio-ca'], jwks_uri: `file://${jwks}` }),
    ROOT_CA_DIR: path.join(dir.path, 'no-cacerts'),
    // ztunnel streams are served only with ambient on (istiod's rule).
    PILOT_ENABLE_AMBIENT: 'true',
  };
  token = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'k' })
    .setIssuer('https://issuer.test')
    .setAudience('istio-ca')
    .setSubject('system:serviceaccount:foo:a')
    .setExpirationTime('5m')
    .sign(key.privateKey);
  running = await start();
});
after(async () => {
  await running?.stop();
  logs.assertNoPrivateKey();
  await dir?.remove();
});

describe('meshpilot discovery with --secureGRPCAddr', () => {
  let client: { certChainPem: string; keyPem: string };
  let root = '';

  it('issues a workload certificate over TLS and persists the root under <configDir>/.meshpilot/ca', async () => {
    root = running.ca!.trustBundlePem();
    const csr = await makeCsr();
    const r = await callCreateCertificate({ address: running.secureGrpcAddress!, rootPem: root, csrPem: csr.csrPem, token });
    assert.ok(r.ok, r.ok ? '' : r.details);
    client = { certChainPem: r.certChain.slice(0, -1).join(''), keyPem: csr.keyPem };
    assert.equal((await stat(path.join(dir.path, '.meshpilot/ca/ca-key.pem'))).mode & 0o777, 0o600);
    assert.match(await running.xds.stats.registry.metrics(), /citadel_server_success_cert_issuance_count 1\b/);
  });

  it('serves ADS on the secure port to a client with its workload certificate', async () => {
    const r = await firstCds(grpc.credentials.createSsl(Buffer.from(root), Buffer.from(client.keyPem), Buffer.from(client.certChainPem)));
    assert.deepEqual(r, { typeUrl: TypeUrl.Cluster });
  });

  it("refuses ADS for a proxy of another namespace than the caller's identity (PERMISSION_DENIED)", async () => {
    const creds = grpc.credentials.createSsl(Buffer.from(root), Buffer.from(client.keyPem), Buffer.from(client.certChainPem));
    const r = await firstCds(creds, 'sidecar~10.0.0.1~a.bar~bar.svc.cluster.local');
    assert.ok('code' in r, `no response expected, got ${JSON.stringify(r)}`);
    assert.equal(r.code, grpc.status.PERMISSION_DENIED);
    assert.match(r.details, /no identities \(spiffe:\/\/cluster.local\/ns\/foo\/sa\/a\) matched bar\//);
  });

  it('refuses ADS on the secure port without credentials (UNAUTHENTICATED)', async () => {
    const r = await firstCds(grpc.credentials.createSsl(Buffer.from(root)));
    assert.ok('code' in r, 'no response expected');
    assert.equal(r.code, grpc.status.UNAUTHENTICATED);
    assert.match(r.details, /no verified client certificate .*no bearer token/);
  });

  it('serves Delta ADS to a ztunnel node authenticated by a bearer token over server-only TLS', async () => {
    assert.deepEqual(await firstZtunnelDelta(token, 'foo'), { typeUrl: ADDRESS_TYPE });
  });

  it("refuses a ztunnel node of another namespace than its token's (PERMISSION_DENIED), and a bad token (UNAUTHENTICATED)", async () => {
    const other = await firstZtunnelDelta(token, 'istio-system');
    assert.ok('code' in other, `no response expected, got ${JSON.stringify(other)}`);
    assert.equal(other.code, grpc.status.PERMISSION_DENIED);
    assert.equal(other.details, 'authorization failed: no identities (spiffe://cluster.local/ns/foo/sa/a) matched istio-system/');
    const [h, p] = token.split('.') as [string, string];
    const bad = await firstZtunnelDelta(`${h}.${p}.${Buffer.from('not the signature').toString('base64url')}`, 'foo');
    assert.ok('code' in bad, `no response expected, got ${JSON.stringify(bad)}`);
    assert.equal(bad.code, grpc.status.UNAUTHENTICATED);
    assert.match(bad.details, /^authentication failure: .*IDTokenAuthenticator: failed to verify the JWT: the token signature is invalid$/);
  });

  it('does not serve the CA on the plaintext port (as istiod)', async () => {
    const r = await callCreateCertificate({
      address: running.grpcAddress,
      rootPem: root,
      csrPem: (await makeCsr()).csrPem,
      token,
      insecure: true,
    });
    assert.ok(!r.ok);
    assert.equal(r.code, grpc.status.UNIMPLEMENTED);
  });

  it('keeps the same root across a restart', async () => {
    const before = running.ca!.trustBundlePem();
    await running.stop();
    running = await start();
    assert.equal(running.ca!.trustBundlePem(), before);
  });
});
