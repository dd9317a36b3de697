import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseCertificates, x509 } from '../crypto.js';
import { captureLogs, makeCsr, openssl, tempDir, writeChainFiles, type TempDir } from '../test-helpers.js';
import { CLOCK_SKEW_GRACE_MS, sanUris } from './certificates.js';
import { CaError } from './errors.js';
import { IstioCa } from './istio-ca.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const logs = captureLogs();
let dir: TempDir;

before(async () => {
  dir = await tempDir();
});
after(async () => {
  logs.assertNoPrivateKey();
  await dir.remove();
});

const newCa = (caDir: string, extra: Partial<Parameters<typeof IstioCa.create>[0]> = {}): Promise<IstioCa> =>
  IstioCa.create({ trustDomain: 'cluster.local', caDir, caCertsDir: path.join(caDir, 'no-cacerts'), logger: logs.logger, ...extra });

async function rejects(p: Promise<unknown>, type: string, re: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CaError, `expected a CaError, got ${String(err)}`);
    assert.equal(err.type, type);
    assert.match(err.message, re);
    return true;
  });
}

describe('self-signed CA', () => {
  let ca: IstioCa;
  let caDir: string;
  before(async () => {
    caDir = path.join(dir.path, 'state');
    ca = await newCa(caDir);
  });

  it('persists the root with the key file at mode 0600', async () => {
    assert.equal(ca.source, 'self-signed');
    assert.equal((await stat(path.join(caDir, 'ca-key.pem'))).mode & 0o777, 0o600);
    assert.equal((await stat(path.join(caDir, 'ca-cert.pem'))).mode & 0o777, 0o644);
    const root = ca.roots()[0]!;
    assert.equal(root.subject, 'O=cluster.local');
    assert.equal(root.getExtension(x509.BasicConstraintsExtension)?.ca, true);
    assert.equal(root.getExtension(x509.KeyUsagesExtension)?.usages, x509.KeyUsageFlags.keyCertSign);
    const years = (root.notAfter.getTime() - root.notBefore.getTime()) / (365 * 86_400_000);
    assert.ok(years > 9.9 && years < 10.1, `root lifetime ${years} years`);
  });

  it('issues a leaf that openssl verifies, with the SAN from the caller and istiod key usages', async () => {
    const csr = await makeCsr({ sans: ['spiffe://cluster.local/ns/admin/sa/root', 'evil.example.com'], cn: 'evil' });
    const before = Date.now();
    const chain = await ca.sign(csr.csrPem, { subjectIds: [ID], ttlMs: 3_600_000 });
    assert.equal(chain.length, 2, 'leaf, root');
    const files = await writeChainFiles(dir, chain, 'ss');
    for (const purpose of ['sslclient', 'sslserver']) {
      const v = await openssl(['verify', '-purpose', purpose, '-CAfile', files.root, files.leaf]);
      assert.equal(v.code, 0, v.stderr + v.stdout);
      assert.match(v.stdout, /: OK/);
    }
    const text = (await openssl(['x509', '-noout', '-text', '-in', files.leaf])).stdout;
    assert.match(text, /X509v3 Subject Alternative Name: critical\s+URI:spiffe:\/\/cluster\.local\/ns\/foo\/sa\/client\s*\n/);
    assert.doesNotMatch(text, /evil|admin/);
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment\s*\n/);
    assert.match(text, /X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication/);
    assert.match(text, /X509v3 Basic Constraints: critical\s+CA:FALSE/);
    const leaf = new x509.X509Certificate(chain[0]!);
    assert.equal(leaf.subject, '');
    assert.deepEqual(sanUris(leaf), [ID]);
    const skew = before - leaf.notBefore.getTime();
    assert.ok(skew >= CLOCK_SKEW_GRACE_MS - 1000 && skew <= CLOCK_SKEW_GRACE_MS + 5000, `NotBefore backdated by ${skew} ms`);
    assert.equal(leaf.notAfter.getTime() - leaf.notBefore.getTime(), 3_600_000 + CLOCK_SKEW_GRACE_MS);
    assert.equal(
      leaf.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId,
      ca.roots()[0]!.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
  });

  it("applies istiod's TTL rules: <= 0 gets the default, above the max is refused", async () => {
    const csr = await makeCsr();
    const leaf = new x509.X509Certificate((await ca.sign(csr.csrPem, { subjectIds: [ID], ttlMs: 0 }))[0]!);
    assert.equal(leaf.notAfter.getTime() - leaf.notBefore.getTime(), 24 * 3_600_000 + CLOCK_SKEW_GRACE_MS);
    await rejects(
      ca.sign(csr.csrPem, { subjectIds: [ID], ttlMs: 91 * 86_400_000 }),
      'TTL_ERROR',
      /^requested TTL 2184h0m0s is greater than the max allowed TTL 2160h0m0s$/,
    );
  });

  it('refuses garbage, tampered and weak-key CSRs', async () => {
    await rejects(ca.sign('hello', { subjectIds: [ID] }), 'CSR_ERROR', /no PEM "CERTIFICATE REQUEST" block/);
    await rejects(
      ca.sign('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n', { subjectIds: [ID] }),
      'CSR_ERROR',
      /failed to parse the CSR/,
    );
    const good = await makeCsr();
    const der = Buffer.from(new x509.Pkcs10CertificateRequest(good.csrPem).rawData);
    der[der.length - 5] = (der[der.length - 5] ?? 0) ^ 0xff; // inside the signature
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    await rejects(ca.sign(tampered, { subjectIds: [ID] }), 'CSR_ERROR', /signature/);
    const rsa1024 = await makeCsr({ key: { kind: 'rsa', bits: 1024 } });
    await rejects(ca.sign(rsa1024.csrPem, { subjectIds: [ID] }), 'CSR_ERROR', /RSA key of 1024 bits is too weak \(at least 2048\)/);
    const p521 = await makeCsr({ key: { kind: 'ec', curve: 'P-521' } });
    await rejects(ca.sign(p521.csrPem, { subjectIds: [ID] }), 'CSR_ERROR', /EC curve .* is not allowed \(P-256 or P-384\)/);
    const p384 = await makeCsr({ key: { kind: 'ec', curve: 'P-384' } });
    assert.equal((await ca.sign(p384.csrPem, { subjectIds: [ID] })).length, 2);
  });

  it('keeps the same root across a restart', async () => {
    const again = await newCa(caDir);
    assert.deepEqual(Buffer.from(again.roots()[0]!.rawData), Buffer.from(ca.roots()[0]!.rawData));
    const chain = await again.sign((await makeCsr()).csrPem, { subjectIds: [ID] });
    const files = await writeChainFiles(dir, [chain[0]!, ca.trustBundlePem()], 'restart');
    assert.equal((await openssl(['verify', '-CAfile', files.root, files.leaf])).code, 0);
  });

  it('refuses a state dir whose key does not match its root', async () => {
    const other = path.join(dir.path, 'other');
    await newCa(other);
    const { copyFile } = await import('node:fs/promises');
    await copyFile(path.join(caDir, 'ca-key.pem'), path.join(other, 'ca-key.pem'));
    await assert.rejects(newCa(other), /ca-key.pem does not match ca-cert.pem; refusing to replace the root/);
  });
});

describe('self-signed CA with an RSA root', () => {
  it('signs with RSA 2048 and openssl verifies', async () => {
    const ca = await newCa(path.join(dir.path, 'rsa'), { keyType: 'RSA' });
    const root = ca.roots()[0]!;
    assert.equal((root.publicKey.algorithm as { modulusLength?: number }).modulusLength, 2048);
    const chain = await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID] });
    const files = await writeChainFiles(dir, chain, 'rsa');
    const v = await openssl(['verify', '-CAfile', files.root, files.leaf]);
    assert.equal(v.code, 0, v.stderr);
    assert.match((await openssl(['x509', '-noout', '-text', '-in', files.leaf])).stdout, /Signature Algorithm: sha256WithRSAEncryption/);
  });
});

describe('root rotation', () => {
  it('re-issue (same key): old and new leaves verify against either root; both stay in the bundle', async () => {
    let now = new Date();
    const caDir = path.join(dir.path, 'rot1');
    const opts = { rootCertTtlMs: 100 * 86_400_000, now: () => now };
    const ca = await newCa(caDir, opts);
    const oldRoot = ca.roots()[0]!;
    const oldLeaf = (await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID], ttlMs: 90 * 86_400_000 }))[0]!;
    const changes: string[] = [];
    ca.onRootsChange((pem) => changes.push(pem));
    now = new Date(now.getTime() + 81 * 86_400_000); // 19 days left < 20 % of 100
    assert.equal(await ca.checkRootRotation(), true);
    assert.equal(changes.length, 1);
    const roots = ca.roots();
    assert.equal(roots.length, 2);
    assert.ok(Buffer.from(roots[1]!.rawData).equals(Buffer.from(oldRoot.rawData)), 'old root kept, second');
    assert.equal(roots[0]!.notAfter.getTime(), Math.floor((now.getTime() + 100 * 86_400_000) / 1000) * 1000);
    const newLeaf = (await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID] }))[0]!;
    const newRootOnly = await dir.file('rot1-new.pem', roots[0]!.toString('pem'));
    const oldRootOnly = await dir.file('rot1-old.pem', oldRoot.toString('pem'));
    const attime = ['-attime', String(Math.floor(now.getTime() / 1000))];
    for (const [leaf, root] of [
      [oldLeaf, newRootOnly],
      [newLeaf, oldRootOnly],
    ] as const) {
      const v = await openssl(['verify', ...attime, '-CAfile', root, await dir.file('rot1-leaf.pem', leaf)]);
      assert.equal(v.code, 0, v.stderr);
    }
    const reloaded = await newCa(caDir, opts);
    assert.equal(reloaded.roots().length, 2, 'the rotated bundle is persisted');
  });

  it('new key: the new root is trusted at once and signs only after the overlap', async () => {
    let now = new Date();
    const caDir = path.join(dir.path, 'rot2');
    const opts = { now: () => now };
    const ca = await newCa(caDir, opts);
    const oldRoot = ca.roots()[0]!;
    await ca.rotateRoot({ newKey: true, overlapMs: 3_600_000 });
    assert.equal(ca.roots().length, 2);
    const during = new x509.X509Certificate((await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID] }))[0]!);
    assert.equal(during.issuer, oldRoot.subject);
    assert.ok(await during.verify({ publicKey: oldRoot.publicKey, signatureOnly: true }), 'still signed by the old key');
    const reloaded = await newCa(caDir, opts);
    assert.equal(reloaded.roots().length, 2, 'the staged root survives a restart');
    now = new Date(now.getTime() + 3_600_001);
    assert.equal(await ca.checkRootRotation(), true);
    const chain = await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID] });
    const after = new x509.X509Certificate(chain[0]!);
    assert.ok(!(await after.verify({ publicKey: oldRoot.publicKey, signatureOnly: true })), 'signed by the new key');
    const bundle = parseCertificates(chain[chain.length - 1]!, 'bundle');
    assert.equal(bundle.length, 2, 'old root still trusted');
    const files = await writeChainFiles(dir, chain, 'rot2');
    const v = await openssl(['verify', '-attime', String(Math.floor(now.getTime() / 1000)), '-CAfile', files.root, files.leaf]);
    assert.equal(v.code, 0, v.stderr);
    const restarted = await newCa(caDir, opts);
    assert.ok(Buffer.from(restarted.roots()[0]!.rawData).equals(Buffer.from(ca.roots()[0]!.rawData)), 'promotion persisted');
  });
});
