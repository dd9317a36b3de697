import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { FakeClock } from '../../test/fake-clock.js';
import { SecretSchema, type Secret } from '../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { DiscoveryRequestSchema, type DiscoveryRequest, type DiscoveryResponse } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { createLogger } from '../util/log.js';
import { TypeUrl } from '../xds/type-urls.js';
import { CertManager } from './cert-manager.js';
import { sdsServiceDefinition, startSdsServer, type SdsServer } from './sds-server.js';
import { createTestCa, type TestCa } from './test-support.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const TTL_MS = 3_600_000;
const SdsClient = grpc.makeGenericClientConstructor(sdsServiceDefinition, 'SecretDiscoveryService');

/** A stream whose responses can be awaited one at a time. */
class SdsStream {
  readonly #call: grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  readonly #queue: DiscoveryResponse[] = [];
  #waiter: (() => void) | undefined;

  constructor(client: grpc.Client) {
    this.#call = (client as unknown as { StreamSecrets(): grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse> }).StreamSecrets();
    this.#call.on('data', (r: DiscoveryResponse) => {
      this.#queue.push(r);
      this.#waiter?.();
    });
    this.#call.on('error', () => {});
  }

  send(names: string[], ack?: DiscoveryResponse, errorMessage?: string): void {
    this.#call.write(
      create(DiscoveryRequestSchema, {
        node: { id: 'sidecar~10.0.0.7~client.foo~foo.svc.cluster.local' },
        resourceNames: names,
        typeUrl: TypeUrl.Secret,
        ...(ack ? { responseNonce: ack.nonce, versionInfo: ack.versionInfo } : {}),
        ...(errorMessage ? { errorDetail: { code: 3, message: errorMessage } } : {}),
      }),
    );
  }

  async next(): Promise<DiscoveryResponse> {
    const deadline = Date.now() + 10_000;
    while (this.#queue.length === 0) {
      if (Date.now() > deadline) throw new Error('no SDS response');
      await new Promise<void>((r) => {
        this.#waiter = r;
        setTimeout(r, 50);
      });
    }
    return this.#queue.shift()!;
  }

  pending(): number {
    return this.#queue.length;
  }

  close(): void {
    this.#call.end();
  }
}

const secretsOf = (r: DiscoveryResponse): Secret[] => r.resources.map((a) => anyUnpack(a, SecretSchema)!);
const bytes = (s: string): string => Buffer.from(s).toString('base64');

describe('SDS server over a Unix socket', () => {
  let dir: string;
  let clock: FakeClock;
  let ca: TestCa;
  let cm: CertManager;
  let sds: SdsServer;
  let client: grpc.Client;
  const logs: string[] = [];

  const waitFor = async (cond: () => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    assert.ok(cond(), what);
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-sds-'));
    clock = new FakeClock(Math.floor(Date.now() / 1000) * 1000);
    ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const log = createLogger({ level: 'debug', sink: (l) => logs.push(l) });
    cm = new CertManager({
      signer: ca.signer,
      keyType: 'ECDSA',
      identityHint: ID,
      ttlMs: TTL_MS,
      gracePeriodRatio: 0.5,
      gracePeriodJitter: 0,
      retryInitialMs: 1000,
      retryMaxMs: 1000,
      readToken: () => Promise.resolve('jwt'),
      clock,
      log,
    });
    sds = await startSdsServer(path.join(dir, 'workload-spiffe-uds', 'socket'), cm, log);
    cm.start();
    clock.advance(0);
    await cm.ready();
    client = new SdsClient(`unix:${path.join(dir, 'workload-spiffe-uds', 'socket')}`, grpc.credentials.createInsecure());
  });

  after(async () => {
    client.close();
    cm.stop();
    await sds.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('makes the socket private to the agent user', async () => {
    const st = await stat(path.join(dir, 'workload-spiffe-uds', 'socket'));
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
  });

  it('serves default (chain + key) and ROOTCA, pushes both after rotation, and does not answer ACKs', async () => {
    const certStream = new SdsStream(client);
    const rootStream = new SdsStream(client);
    certStream.send(['default']);
    rootStream.send(['ROOTCA']);
    const first = await certStream.next();
    const firstRoot = await rootStream.next();
    const cur = cm.current()!;
    assert.equal(first.typeUrl, TypeUrl.Secret);
    assert.equal(first.versionInfo, '1');
    const [def] = secretsOf(first);
    assert.equal(def?.name, 'default');
    assert.equal(def?.type.case, 'tlsCertificate');
    const tls = def?.type.case === 'tlsCertificate' ? def.type.value : undefined;
    const inline = (ds: unknown): string => Buffer.from((ds as { specifier: { value: Uint8Array } }).specifier.value).toString('base64');
    assert.equal(inline(tls?.certificateChain), bytes(cur.certChainPem));
    assert.equal(inline(tls?.privateKey), bytes(cur.privateKeyPem));
    const [root] = secretsOf(firstRoot);
    assert.equal(root?.name, 'ROOTCA');
    assert.equal(root?.type.case === 'validationContext' && inline(root.type.value.trustedCa), bytes(ca.rootPem));

    // ACK both; the next message must be the rotation, not a resend of version 1.
    certStream.send(['default'], first);
    rootStream.send(['ROOTCA'], firstRoot);
    await waitFor(() => logs.filter((l) => l.includes('"msg":"SDS ACK"')).length === 2, 'both ACKs seen');
    clock.advance(TTL_MS / 2);
    const rotated = await certStream.next();
    assert.equal(rotated.versionInfo, '2');
    assert.notEqual(rotated.nonce, first.nonce);
    const [def2] = secretsOf(rotated);
    const tls2 = def2?.type.case === 'tlsCertificate' ? def2.type.value : undefined;
    assert.equal(inline(tls2?.certificateChain), bytes(cm.current()!.certChainPem));
    assert.notEqual(inline(tls2?.privateKey), inline(tls?.privateKey), 'the rotated secret has a new key');
    const rootAgain = await rootStream.next();
    assert.equal(rootAgain.versionInfo, '2');
    certStream.close();
    rootStream.close();
  });

  it('answers a change of names on an open stream, logs NACKs, and ignores unknown names', async () => {
    const s = new SdsStream(client);
    s.send(['default']);
    const r1 = await s.next();
    s.send(['default', 'ROOTCA'], r1);
    const r2 = await s.next();
    assert.deepEqual(
      secretsOf(r2).map((x) => x.name),
      ['default', 'ROOTCA'],
    );
    s.send(['default', 'ROOTCA'], r2, 'bad certificate');
    await waitFor(() => logs.some((l) => l.includes('SDS NACK') && l.includes('bad certificate')), 'NACK logged');
    s.send(['kubernetes://my-secret'], r2);
    await waitFor(() => logs.some((l) => l.includes('unknown secrets') && l.includes('kubernetes://my-secret')), 'unknown name logged');
    assert.equal(s.pending(), 0, 'nothing to send for an unknown name');
    s.close();
  });

  it('never logs key material', () => {
    for (const l of logs) assert.doesNotMatch(l, /PRIVATE KEY/);
  });
});
