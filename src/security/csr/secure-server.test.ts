import assert from 'node:assert/strict';
import path from 'node:path';
import { connect } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { x509 } from '../crypto.js';
import { startSecureGrpc, type RunningSecureGrpc } from '../secure-grpc.js';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../test-helpers.js';
import { istiodDnsNames } from './secure-server.js';
import { callCreateCertificate } from './test-client.js';

const ID = 'spiffe://cluster.local/ns/foo/sa/a';
const logs = captureLogs();
let dir: TempDir;
let s: RunningSecureGrpc;

/** The DER of the last certificate the server presents (its root). */
async function servedRoot(trust: string): Promise<Buffer> {
  const [host, port] = s.address.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const sock = connect({ host, port: Number(port), servername: 'istiod.istio-system.svc', ca: trust, ALPNProtocols: ['h2'] }, () => {
      let c = sock.getPeerCertificate(true);
      while (c.issuerCertificate && c.issuerCertificate !== c) c = c.issuerCertificate;
      sock.end();
      resolve(c.raw);
    });
    sock.on('error', reject);
  });
}

before(async () => {
  dir = await tempDir();
  s = await startSecureGrpc({
    ca: { trustDomain: 'cluster.local', caDir: path.join(dir.path, 'ca'), caCertsDir: path.join(dir.path, 'none') },
    listen: { host: '127.0.0.1', port: 0 },
    namespace: 'istio-system',
    logger: logs.logger,
  });
});
after(async () => {
  s.close();
  s.server.server.forceShutdown();
  logs.assertNoPrivateKey();
  await dir.remove();
});

describe('secure gRPC server', () => {
  it('names the serving certificate as istiod does (revision included)', () => {
    assert.deepEqual(istiodDnsNames('mesh', ['x.example.com', 'x.example.com'], 'canary'), [
      'istio-pilot.mesh.svc',
      'istiod-canary.mesh.svc',
      'istiod-remote.mesh.svc',
      'istiod.mesh.svc',
      'x.example.com',
    ]);
  });

  it('after a new-key root rotation: serves a certificate from the new root and still accepts clients of the old one', async () => {
    const oldRoot = s.ca.trustBundlePem();
    const csr = await makeCsr();
    const oldCert = await s.ca.sign(csr.csrPem, { subjectIds: [ID] });
    const clientCert = { certChainPem: oldCert.slice(0, -1).join(''), keyPem: csr.keyPem };
    assert.ok((await callCreateCertificate({ address: s.address, rootPem: oldRoot, csrPem: (await makeCsr()).csrPem, clientCert })).ok);

    await s.ca.rotateRoot({ newKey: true, overlapMs: 0 });
    const bundle = s.ca.trustBundlePem();
    const newRoot = s.ca.roots()[0]!;
    assert.equal(s.ca.roots().length, 2);
    // The serving certificate is re-issued asynchronously: poll for it (bounded).
    const want = Buffer.from(newRoot.rawData);
    let served = await servedRoot(bundle);
    for (let i = 0; i < 40 && !served.equals(want); i++) {
      await new Promise((r) => setTimeout(r, 50));
      served = await servedRoot(bundle);
    }
    assert.ok(served.equals(want), 'the serving chain ends with the new root');
    const r = await callCreateCertificate({ address: s.address, rootPem: bundle, csrPem: (await makeCsr()).csrPem, clientCert });
    assert.ok(r.ok, r.ok ? '' : r.details);
    assert.equal(r.certChain[r.certChain.length - 1], bundle, 'the response carries both roots');
    const leaf = new x509.X509Certificate(r.certChain[0]!);
    assert.ok(await leaf.verify({ publicKey: newRoot.publicKey, signatureOnly: true }), 'signed by the new root');
  });
});
