import assert from 'node:assert/strict';
import { access, copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseCertificates, x509 } from '../crypto.js';
import { captureLogs, makeCsr, openssl, tempDir, writeChainFiles, type TempDir } from '../test-helpers.js';
import { IstioCa } from './istio-ca.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/client';
const logs = captureLogs();
let dir: TempDir;

async function ok(args: string[]): Promise<void> {
  const r = await openssl(args);
  assert.equal(r.code, 0, `openssl ${args.join(' ')}: ${r.stderr}`);
}

/** A root and an intermediate made by openssl itself, laid out as Istio's cacerts secret. */
async function makeCacerts(out: string, key: 'ec' | 'rsa'): Promise<void> {
  await mkdir(out, { recursive: true });
  const f = (n: string): string => path.join(out, n);
  await writeFile(
    f('ext.cnf'),
    '[v3_ca]\nbasicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n',
  );
  if (key === 'ec') {
    await ok(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('root-key.pem')]);
    await ok(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('ca-key.pem')]); // SEC1 "EC PRIVATE KEY"
  } else {
    await ok(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('root-key.pem')]);
    await ok(['genrsa', '-traditional', '-out', f('ca-key.pem'), '2048']); // PKCS#1 "RSA PRIVATE KEY"
  }
  await ok([
    'req',
    '-x509',
    '-new',
    '-key',
    f('root-key.pem'),
    '-subj',
    '/O=Istio/CN=Root CA',
    '-days',
    '3650',
    '-sha256',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-out',
    f('root-cert.pem'),
  ]);
  await ok(['req', '-new', '-key', f('ca-key.pem'), '-subj', '/O=Istio/CN=Intermediate CA/L=cluster1', '-out', f('ca.csr')]);
  await ok([
    'x509',
    '-req',
    '-in',
    f('ca.csr'),
    '-CA',
    f('root-cert.pem'),
    '-CAkey',
    f('root-key.pem'),
    '-set_serial',
    '7',
    '-days',
    '730',
    '-sha256',
    '-extfile',
    f('ext.cnf'),
    '-extensions',
    'v3_ca',
    '-out',
    f('ca-cert.pem'),
  ]);
  const { readFile } = await import('node:fs/promises');
  await writeFile(f('cert-chain.pem'), (await readFile(f('ca-cert.pem'), 'utf8')) + (await readFile(f('root-cert.pem'), 'utf8')));
  await rm(f('root-key.pem'));
}

before(async () => {
  dir = await tempDir();
});
after(async () => {
  logs.assertNoPrivateKey();
  await dir.remove();
});

describe('plug-in CA certificates (cacerts)', () => {
  for (const key of ['ec', 'rsa'] as const) {
    it(`are used when present (${key} intermediate): leaf, intermediate, root; openssl verify -untrusted passes`, async () => {
      const cacerts = path.join(dir.path, `cacerts-${key}`);
      const caDir = path.join(dir.path, `state-${key}`);
      await makeCacerts(cacerts, key);
      const ca = await IstioCa.create({ trustDomain: 'cluster.local', caDir, caCertsDir: cacerts, logger: logs.logger });
      assert.equal(ca.source, 'plugged');
      const chain = await ca.sign((await makeCsr()).csrPem, { subjectIds: [ID] });
      assert.equal(chain.length, 3, 'leaf, intermediate, root (the root of cert-chain.pem is not repeated)');
      const leaf = new x509.X509Certificate(chain[0]!);
      assert.equal(leaf.issuer, 'O=Istio, CN=Intermediate CA, L=cluster1');
      assert.equal(parseCertificates(chain[2]!, 'root')[0]!.subject, 'O=Istio, CN=Root CA');
      const files = await writeChainFiles(dir, chain, `plug-${key}`);
      assert.ok(files.untrusted);
      const v = await openssl(['verify', '-CAfile', files.root, '-untrusted', files.untrusted, files.leaf]);
      assert.equal(v.code, 0, v.stderr);
      assert.match(v.stdout, /: OK/);
      await assert.rejects(access(caDir), 'no self-signed state is created in plug-in mode');
    });
  }

  it('refuse a key that does not belong to ca-cert.pem, and a missing root-cert.pem', async () => {
    const a = path.join(dir.path, 'bad-a');
    const b = path.join(dir.path, 'bad-b');
    await makeCacerts(a, 'ec');
    await makeCacerts(b, 'ec');
    await copyFile(path.join(b, 'ca-key.pem'), path.join(a, 'ca-key.pem'));
    const opts = { trustDomain: 'cluster.local', caDir: path.join(dir.path, 'unused'), logger: logs.logger };
    await assert.rejects(IstioCa.create({ ...opts, caCertsDir: a }), /the private key does not match the CA certificate/);
    await rm(path.join(b, 'root-cert.pem'));
    await assert.rejects(IstioCa.create({ ...opts, caCertsDir: b }), /root-cert.pem is missing/);
  });

  it('refuse a chain that does not lead to root-cert.pem', async () => {
    const a = path.join(dir.path, 'chain-a');
    const b = path.join(dir.path, 'chain-b');
    await makeCacerts(a, 'ec');
    await makeCacerts(b, 'ec');
    await copyFile(path.join(b, 'root-cert.pem'), path.join(a, 'root-cert.pem'));
    await assert.rejects(
      IstioCa.create({ trustDomain: 'cluster.local', caDir: path.join(dir.path, 'unused2'), caCertsDir: a, logger: logs.logger }),
      /does not lead to a root/,
    );
  });

  it('root-cert.pem alone: self-signed CA, with those roots added to the trust bundle (as istiod)', async () => {
    const src = path.join(dir.path, 'extra-src');
    await makeCacerts(src, 'ec');
    const cacerts = path.join(dir.path, 'extra');
    await mkdir(cacerts);
    await copyFile(path.join(src, 'root-cert.pem'), path.join(cacerts, 'root-cert.pem'));
    const ca = await IstioCa.create({
      trustDomain: 'example.org',
      caDir: path.join(dir.path, 'extra-state'),
      caCertsDir: cacerts,
      logger: logs.logger,
    });
    assert.equal(ca.source, 'self-signed');
    assert.deepEqual(
      ca.roots().map((r) => r.subject),
      ['O=example.org', 'O=Istio, CN=Root CA'],
    );
  });
});
