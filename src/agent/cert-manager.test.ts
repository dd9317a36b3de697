import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FakeClock, flushMicrotasks } from '../../test/fake-clock.js';
import { x509 } from '../security/crypto.js';
import { createLogger } from '../util/log.js';
import type { CertSigner } from './ca-client.js';
import { CertManager, type CertManagerOptions, type WorkloadSecret } from './cert-manager.js';
import { createKeyAndCsr } from './csr.js';
import { MAX_TIMER_MS } from './rotation.js';
import { createTestCa } from './test-support.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const TTL_MS = 3_600_000;

/**
 * Lets the manager's async work (WebCrypto key generation runs off the main thread) finish until
 * `cond` holds. Only the fake clock drives the schedule; real time here is just a bound.
 */
async function settle(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  assert.ok(cond(), `never happened: ${what}`);
}

interface Harness {
  readonly clock: FakeClock;
  readonly cm: CertManager;
  readonly updates: WorkloadSecret[];
  readonly logs: string[];
}

function harness(signer: CertSigner, clock: FakeClock, extra: Partial<CertManagerOptions> = {}): Harness {
  const logs: string[] = [];
  const cm = new CertManager({
    signer,
    keyType: 'ECDSA',
    identityHint: ID,
    ttlMs: TTL_MS,
    gracePeriodRatio: 0.5,
    gracePeriodJitter: 0,
    retryInitialMs: 1000,
    retryMaxMs: 8000,
    readToken: () => Promise.resolve('test-token'),
    clock,
    random: () => 1 - Number.EPSILON,
    log: createLogger({ level: 'debug', sink: (l) => logs.push(l) }),
    ...extra,
  });
  const updates: WorkloadSecret[] = [];
  cm.onUpdate((s) => void updates.push(s));
  return { clock, cm, updates, logs };
}

// x509 validity has whole-second precision: keep the fake clock on a second boundary.
const start = (): FakeClock => new FakeClock(Math.floor(Date.now() / 1000) * 1000);

describe('CertManager', () => {
  it('gets the first certificate with the token and renews at half the TTL with the current certificate', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const h = harness(ca.signer, clock);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1 && clock.pendingTimers() === 1, 'first certificate');
    const first = h.updates[0]!;
    assert.deepEqual(
      ca.requests.map((r) => [r.auth, r.ttlSeconds]),
      [['token', 3600]],
    );
    assert.equal(first.identity, ID);
    assert.equal(first.version, 1);
    assert.equal(first.expiresAt, clock.now() + TTL_MS);
    assert.equal(first.rootCertPem, ca.rootPem);
    assert.equal(await h.cm.ready(), first);

    clock.advance(TTL_MS / 2 - 1);
    await flushMicrotasks();
    assert.equal(ca.requests.length, 1, 'no renewal before half the lifetime');
    clock.advance(1);
    await settle(() => h.updates.length === 2, 'renewal');
    assert.deepEqual(
      ca.requests.map((r) => r.auth),
      ['token', 'cert'],
    );
    const second = h.updates[1]!;
    assert.equal(second.version, 2);
    assert.notEqual(second.serial, first.serial);
    assert.notEqual(second.privateKeyPem, first.privateKeyPem, 'a new key per certificate');
    assert.equal(h.cm.current(), second);
    h.cm.stop();
    assert.equal(clock.pendingTimers(), 0);
  });

  it('falls back to the token when the CA refuses the current certificate', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const h = harness(ca.signer, clock);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1 && clock.pendingTimers() === 1, 'first certificate');
    ca.refuse('cert');
    clock.advance(TTL_MS / 2);
    await settle(() => h.updates.length === 2, 'renewal');
    assert.deepEqual(
      ca.requests.map((r) => r.auth),
      ['token', 'cert', 'token'],
    );
    assert.ok(h.logs.some((l) => l.includes('trying the next credential')));
    h.cm.stop();
  });

  it('retries with exponential backoff until the CA answers', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const h = harness(ca.signer, clock);
    ca.failNext(2);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.logs.some((l) => l.includes('"attempt":1')), 'first failure');
    clock.advance(999);
    await flushMicrotasks();
    assert.equal(ca.requests.length, 1, 'first retry waits the initial interval');
    clock.advance(1);
    await settle(() => h.logs.some((l) => l.includes('"attempt":2')), 'second failure');
    const retry = JSON.parse(h.logs.find((l) => l.includes('"attempt":2'))!) as { retryInMs: number; error: string };
    assert.equal(retry.retryInMs, 2000);
    assert.match(retry.error, /CA unavailable/);
    clock.advance(2000);
    await settle(() => h.updates.length === 1, 'certificate after retries');
    assert.equal(ca.requests.length, 3);
    h.cm.stop();
  });

  it('refuses a certificate issued for a key other than its CSR', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const swapped: CertSigner = {
      async sign(req) {
        const other = await createKeyAndCsr('ECDSA', ID);
        return ca.signer.sign({ ...req, csrPem: other.csrPem });
      },
    };
    const h = harness(swapped, clock);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.logs.some((l) => l.includes('retrying')), 'failure');
    assert.equal(h.cm.current(), undefined);
    assert.ok(h.logs.some((l) => l.includes('different public key')));
    h.cm.stop();
  });

  it('says so when it has no credential at all', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const h = harness(ca.signer, clock, { readToken: () => Promise.resolve(undefined) });
    h.cm.start();
    clock.advance(0);
    await settle(() => h.logs.some((l) => l.includes('retrying')), 'failure');
    assert.equal(ca.requests.length, 0);
    assert.ok(h.logs.some((l) => l.includes('no credential for the CA')));
    h.cm.stop();
  });

  it('authenticates the first request with a provisioned certificate (PROV_CERT)', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const { csrPem, privateKeyPem } = await createKeyAndCsr('ECDSA', ID);
    const provChain = await ca.signer.sign({ csrPem, ttlSeconds: 7200, credential: { kind: 'token', token: 't' } });
    ca.requests.length = 0;
    const h = harness(ca.signer, clock, {
      readToken: () => Promise.resolve(undefined),
      provisioned: () => Promise.resolve({ certChainPem: provChain.join('\n'), privateKeyPem }),
    });
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1 && clock.pendingTimers() === 1, 'first certificate');
    assert.deepEqual(
      ca.requests.map((r) => r.auth),
      ['cert'],
    );
    h.cm.stop();
  });

  it('waits longer than one timer allows (60-day certificate) without renewing early', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const ttl = 60 * 86_400_000;
    const h = harness(ca.signer, clock, { ttlMs: ttl });
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1 && clock.pendingTimers() === 1, 'first certificate');
    clock.advance(MAX_TIMER_MS);
    await flushMicrotasks();
    assert.equal(ca.requests.length, 1, 'woken at the timer limit, still not due');
    assert.equal(clock.pendingTimers(), 1);
    clock.advance(ttl / 2 - MAX_TIMER_MS);
    await settle(() => h.updates.length === 2, 'renewal at half of 60 days');
    h.cm.stop();
  });

  it('takes the trust bundle from the last chain element, with every root in it', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const other = await createTestCa({ identity: ID, now: () => clock.now() });
    const rotating: CertSigner = {
      async sign(req) {
        const chain = await ca.signer.sign(req);
        return [...chain.slice(0, -1), `${chain[chain.length - 1]!}\n${other.rootPem}`];
      },
    };
    const h = harness(rotating, clock);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1, 'first certificate');
    assert.equal(h.updates[0]!.rootCertPem, ca.rootPem + other.rootPem);
    h.cm.stop();
  });

  it('never logs key material', async () => {
    const clock = start();
    const ca = await createTestCa({ identity: ID, now: () => clock.now() });
    const h = harness(ca.signer, clock);
    h.cm.start();
    clock.advance(0);
    await settle(() => h.updates.length === 1 && clock.pendingTimers() === 1, 'first certificate');
    ca.refuse('cert');
    clock.advance(TTL_MS / 2);
    await settle(() => h.updates.length === 2, 'renewal');
    h.cm.stop();
    assert.ok(h.logs.length >= 3);
    const keyBody = h.updates[0]!.privateKeyPem.split('\n')[1]!;
    for (const l of h.logs) {
      assert.doesNotMatch(l, /PRIVATE KEY|BEGIN /);
      assert.ok(!l.includes(keyBody.slice(0, 24)));
      assert.ok(!l.includes('test-token'));
    }
    // The issued certificate carries the identity the CA granted.
    const leaf = new x509.X509Certificate(h.updates[1]!.certChainPem.split(/(?<=-----END CERTIFICATE-----\n)/)[0]!);
    assert.ok(leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.items.some((n) => n.value === ID));
  });
});
