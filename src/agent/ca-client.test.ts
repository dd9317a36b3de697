import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  IstioCertificateRequestSchema,
  IstioCertificateResponseSchema,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
} from '../gen/security/v1alpha1/ca_pb.js';
import { MeshError } from '../util/errors.js';
import { CREATE_CERTIFICATE_PATH, caClient } from './ca-client.js';
import { createKeyAndCsr } from './csr.js';
import { createTestCa, type TestCa } from './test-support.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const ISTIOD = 'istiod.istio-system.svc';

interface Seen {
  authorization: string | undefined;
  clusterId: string | undefined;
  peer: string | undefined;
  ttl: bigint;
}

describe('caClient', () => {
  let ca: TestCa;
  let server: grpc.Server;
  let addr: string;
  const seen: Seen[] = [];

  before(async () => {
    ca = await createTestCa({ identity: ID });
    const serving = await ca.issue([ISTIOD]);
    server = new grpc.Server();
    server.addService(
      {
        CreateCertificate: {
          path: CREATE_CERTIFICATE_PATH,
          requestStream: false,
          responseStream: false,
          requestSerialize: (m: IstioCertificateRequest) => Buffer.from(toBinary(IstioCertificateRequestSchema, m)),
          requestDeserialize: (b: Buffer) => fromBinary(IstioCertificateRequestSchema, b),
          responseSerialize: (m: IstioCertificateResponse) => Buffer.from(toBinary(IstioCertificateResponseSchema, m)),
          responseDeserialize: (b: Buffer) => fromBinary(IstioCertificateResponseSchema, b),
        },
      },
      {
        CreateCertificate: (
          call: grpc.ServerUnaryCall<IstioCertificateRequest, IstioCertificateResponse>,
          cb: grpc.sendUnaryData<IstioCertificateResponse>,
        ) => {
          const authorization = call.metadata.get('authorization')[0]?.toString();
          seen.push({
            authorization,
            clusterId: call.metadata.get('clusterid')[0]?.toString(),
            peer: call.getAuthContext().sslPeerCertificate?.subjectaltname,
            ttl: call.request.validityDuration,
          });
          if (authorization === 'Bearer bad') return cb({ code: grpc.status.UNAUTHENTICATED, details: 'request authenticate failure' });
          ca.signer
            .sign({
              csrPem: call.request.csr,
              ttlSeconds: Number(call.request.validityDuration),
              credential: { kind: 'token', token: 'x' },
            })
            .then(
              (certChain) => cb(null, create(IstioCertificateResponseSchema, { certChain })),
              (err: Error) => cb({ code: grpc.status.INTERNAL, details: err.message }),
            );
        },
      },
    );
    // As istiod's 15012: ask for a client certificate (renewal) but do not require one (JWT callers).
    const provider: grpc.experimental.CertificateProvider = {
      addCaCertificateListener: (l) => queueMicrotask(() => l({ caCertificate: Buffer.from(ca.rootPem) })),
      removeCaCertificateListener: () => {},
      addIdentityCertificateListener: (l) =>
        queueMicrotask(() => l({ certificate: Buffer.from(serving.certChainPem), privateKey: Buffer.from(serving.privateKeyPem) })),
      removeIdentityCertificateListener: () => {},
    };
    const creds = grpc.experimental.createCertificateProviderServerCredentials(provider, provider, false);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', creds, (e, p) => (e ? reject(e) : resolve(p))),
    );
    addr = `127.0.0.1:${port}`;
  });
  after(() => void server.forceShutdown());

  const client = (serverName = ISTIOD) =>
    caClient({ caAddr: addr, rootCertPem: () => Promise.resolve(ca.rootPem), serverName, clusterId: 'Kubernetes', timeoutMs: 5000 });

  it('sends the CSR and TTL with the JWT as a bearer token, over TLS checked for the istiod SAN', async () => {
    const { csrPem } = await createKeyAndCsr('ECDSA', ID);
    const chain = await client().sign({ csrPem, ttlSeconds: 3600, credential: { kind: 'token', token: 'header.payload.sig' } });
    assert.equal(chain.length, 2);
    assert.equal(chain[1]?.trim(), ca.rootPem.trim());
    const s = seen.at(-1)!;
    assert.deepEqual([s.authorization, s.clusterId, s.peer, s.ttl], ['Bearer header.payload.sig', 'Kubernetes', undefined, 3600n]);
  });

  it('renews with the current certificate as the TLS client certificate and no token', async () => {
    const current = await ca.issue([ID]);
    const { csrPem } = await createKeyAndCsr('ECDSA', ID);
    await client().sign({
      csrPem,
      ttlSeconds: 60,
      credential: { kind: 'cert', certChainPem: current.certChainPem, privateKeyPem: current.privateKeyPem },
    });
    const s = seen.at(-1)!;
    assert.equal(s.authorization, undefined);
    assert.equal(s.peer, `URI:${ID}`);
  });

  it('maps refusals to MeshError codes and never echoes the token', async () => {
    const { csrPem } = await createKeyAndCsr('ECDSA', ID);
    const err = await client()
      .sign({ csrPem, ttlSeconds: 60, credential: { kind: 'token', token: 'bad' } })
      .catch((e: unknown) => e);
    assert.ok(err instanceof MeshError);
    assert.equal(err.code, 'UNAUTHENTICATED');
    assert.match(err.message, new RegExp(`CA at ${addr} \\(token auth\\): UNAUTHENTICATED: request authenticate failure`));
    assert.doesNotMatch(err.message, /Bearer/);
  });

  it('does not talk to a server whose certificate is not for the expected name', async () => {
    const { csrPem } = await createKeyAndCsr('ECDSA', ID);
    const before = seen.length;
    const err = await client('istiod.other.svc')
      .sign({ csrPem, ttlSeconds: 60, credential: { kind: 'token', token: 't' } })
      .catch((e: unknown) => e);
    assert.ok(err instanceof MeshError);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.equal(seen.length, before, 'the request never reached the server');
  });
});
