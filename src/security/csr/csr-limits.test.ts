import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { startSecureGrpc, type RunningSecureGrpc } from '../secure-grpc.js';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../test-helpers.js';
import { csrSizeRefusal, DEFAULT_CSR_LIMITS, PerIdentityRateLimiter } from './csr-limits.js';
import { callCreateCertificate, expectCsrError, type CsrCallResult } from './test-client.js';

const ISSUER = 'https://issuer.limits.test';
const PER_MINUTE = 3;
const logs = captureLogs();
let dir: TempDir;
let key: CryptoKey;
let server: RunningSecureGrpc;
let clock = 0;
let csrPem: string;

const token = (sa: string): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience('istio-ca')
    .setSubject(`system:serviceaccount:foo:${sa}`)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key);

const call = async (sa: string, csr = csrPem): Promise<CsrCallResult> =>
  callCreateCertificate({ address: server.address, rootPem: server.ca.trustBundlePem(), csrPem: csr, token: await token(sa) });

before(async () => {
  dir = await tempDir();
  const keys = await generateKeyPair('ES256');
  key = keys.privateKey;
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] });
  server = await startSecureGrpc({
    ca: { trustDomain: 'cluster.local', caDir: path.join(dir.path, 'ca'), caCertsDir: path.join(dir.path, 'none') },
    listen: { host: '127.0.0.1', port: 0 },
    namespace: 'istio-system',
    jwtRule: { issuer: ISSUER, audiences: ['istio-ca'], jwks },
    csrLimits: { maxCsrBytes: 4096, perIdentityPerMinute: PER_MINUTE },
    csrClock: () => clock,
    logger: logs.logger,
  });
  csrPem = (await makeCsr()).csrPem;
});

after(async () => {
  server?.close();
  await new Promise<void>((r) => (server ? server.server.server.tryShutdown(() => r()) : r()));
  await dir?.remove();
});

describe('CSR limits at the CA (real gRPC calls)', () => {
  it('refuses a CSR over the size limit with INVALID_ARGUMENT naming both sizes, before authentication', async () => {
    const big = csrPem + 'A'.repeat(5000);
    expectCsrError(
      await call('sized', big),
      grpc.status.INVALID_ARGUMENT,
      new RegExp(`the CSR is ${Buffer.byteLength(big)} bytes; the limit is 4096 bytes`),
    );
    // No token at all: still the size answer (nothing else ran).
    const r = await callCreateCertificate({ address: server.address, rootPem: server.ca.trustBundlePem(), csrPem: big });
    expectCsrError(r, grpc.status.INVALID_ARGUMENT, /limit is 4096 bytes/);
    assert.ok((await call('sized')).ok, 'a normal CSR from the same caller passes');
  });

  it('a flood from one identity gets RESOURCE_EXHAUSTED after its burst; other identities are unaffected; tokens come back with time', async () => {
    for (let i = 0; i < PER_MINUTE; i++) assert.ok((await call('flood')).ok, `request ${i + 1} of the burst`);
    expectCsrError(
      await call('flood'),
      grpc.status.RESOURCE_EXHAUSTED,
      new RegExp(`too many CSRs for spiffe://cluster.local/ns/foo/sa/flood: at most ${PER_MINUTE} per minute; retry in 20s`),
    );
    assert.ok((await call('bystander')).ok, 'another identity still gets certificates');
    clock += 60_000 / PER_MINUTE;
    assert.ok((await call('flood')).ok, 'one token refilled after 1/3 minute');
    expectCsrError(await call('flood'), grpc.status.RESOURCE_EXHAUSTED, /too many CSRs/);
    assert.ok(server.csrStats().limited >= 2 + 2);
    assert.ok(logs.lines.some((l) => l.includes('CSR refused: rate limit') && l.includes('sa/flood')));
  });
});

describe('PerIdentityRateLimiter', () => {
  it('keeps a bucket per key, refills continuously, and 0 means no limit', () => {
    const rl = new PerIdentityRateLimiter(2);
    assert.equal(rl.take('a', 0), undefined);
    assert.equal(rl.take('a', 0), undefined);
    assert.equal(rl.take('a', 0), 30_000, 'the next token in half a minute');
    assert.equal(rl.take('b', 0), undefined);
    assert.equal(rl.take('a', 15_000), 15_000);
    assert.equal(rl.take('a', 30_000), undefined);
    const off = new PerIdentityRateLimiter(0);
    for (let i = 0; i < 1000; i++) assert.equal(off.take('x', 0), undefined);
  });

  it('drops refilled buckets once it tracks many identities (bounded memory)', () => {
    const rl = new PerIdentityRateLimiter(60);
    for (let i = 0; i < 10_000; i++) rl.take(`id-${i}`, 0);
    assert.equal(rl.size, 10_000);
    rl.take('late', 120_000);
    assert.equal(rl.size, 1, 'every earlier bucket was full again and dropped');
  });

  it('size refusal names the size and the limit', () => {
    assert.equal(csrSizeRefusal(DEFAULT_CSR_LIMITS.maxCsrBytes, DEFAULT_CSR_LIMITS), undefined);
    assert.equal(csrSizeRefusal(40_000, DEFAULT_CSR_LIMITS), 'the CSR is 40000 bytes; the limit is 32768 bytes');
  });
});
