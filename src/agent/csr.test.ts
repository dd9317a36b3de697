import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseCsr } from '../security/ca/csr.js';
import { publicKeyInfo, x509 } from '../security/crypto.js';
import { createKeyAndCsr } from './csr.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('createKeyAndCsr', () => {
  it('makes an ECDSA P-256 key and a self-signed CSR with the SPIFFE ID as a critical SAN and no subject', async () => {
    const { csrPem, privateKeyPem, publicKeySpki } = await createKeyAndCsr('ECDSA', ID);
    const csr = new x509.Pkcs10CertificateRequest(csrPem);
    assert.equal(await csr.verify(), true);
    assert.equal(csr.subject, '');
    // Pkcs10CertificateRequest.getExtension matches by OID only.
    const san = csr.getExtension('2.5.29.17') as x509.SubjectAlternativeNameExtension | null;
    assert.ok(san, 'SAN extension present');
    assert.equal(san.critical, true);
    assert.deepEqual(
      san.names.items.map((n) => [n.type, n.value]),
      [['url', ID]],
    );
    assert.deepEqual(publicKeyInfo(csr.publicKey.rawData), { type: 'ec', curve: 'P-256' });
    // The key PEM is the private half of the CSR's public key.
    const spkiFromKey = createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'der' });
    assert.ok(Buffer.from(publicKeySpki).equals(spkiFromKey));
    assert.ok(Buffer.from(csr.publicKey.rawData).equals(spkiFromKey));
    assert.match(privateKeyPem, /^-----BEGIN PRIVATE KEY-----/);
  });

  it('makes RSA 2048 keys on request', async () => {
    const { csrPem } = await createKeyAndCsr('RSA', ID);
    const csr = new x509.Pkcs10CertificateRequest(csrPem);
    assert.equal(await csr.verify(), true);
    assert.deepEqual(publicKeyInfo(csr.publicKey.rawData), { type: 'rsa', bits: 2048 });
  });

  it('is accepted by the CA intake (signature and key strength checks)', async () => {
    for (const type of ['ECDSA', 'RSA'] as const) {
      const { csrPem } = await createKeyAndCsr(type, ID);
      const parsed = await parseCsr(csrPem);
      assert.ok(parsed.publicKey);
    }
  });

  it('gives a fresh key every time', async () => {
    const a = await createKeyAndCsr('ECDSA', ID);
    const b = await createKeyAndCsr('ECDSA', ID);
    assert.ok(!Buffer.from(a.publicKeySpki).equals(Buffer.from(b.publicKeySpki)));
  });

  it('verifies with openssl req -verify', { skip: !hasOpenssl() && 'openssl not installed' }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-csr-'));
    try {
      const { csrPem } = await createKeyAndCsr('ECDSA', ID);
      const file = path.join(dir, 'req.pem');
      writeFileSync(file, csrPem);
      const out = execFileSync('openssl', ['req', '-in', file, '-noout', '-verify', '-text'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      assert.match(out, /URI:spiffe:\/\/cluster\.local\/ns\/foo\/sa\/client/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
