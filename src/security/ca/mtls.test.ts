import assert from 'node:assert/strict';
import path from 'node:path';
import { connect, createServer, type PeerCertificate, type TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../test-helpers.js';
import { IstioCa } from './istio-ca.js';

const SERVER = 'spiffe://cluster.local/ns/foo/sa/server';
const CLIENT = 'spiffe://cluster.local/ns/foo/sa/client';
const logs = captureLogs();
let dir: TempDir;
let ca: IstioCa;
let otherCa: IstioCa;

interface Workload {
  readonly cert: string;
  readonly key: string;
}

async function workload(from: IstioCa, id: string): Promise<Workload> {
  const csr = await makeCsr();
  const chain = await from.sign(csr.csrPem, { subjectIds: [id] });
  return { cert: chain.slice(0, -1).join(''), key: csr.keyPem };
}

/** One mTLS handshake: the SPIFFE IDs each side saw, or the error of the side that refused. */
async function handshake(
  server: Workload,
  client: Workload,
  trust: { server: string; client: string },
): Promise<{ serverSaw: string; clientSaw: string } | Error> {
  let serverSaw = '';
  let serverError = '';
  // The server checks the verification result itself, to report why it refused.
  const srv = createServer(
    { cert: server.cert, key: server.key, ca: trust.server, requestCert: true, rejectUnauthorized: false },
    (s: TLSSocket) => {
      if (!s.authorized) {
        serverError = String(s.authorizationError);
        s.destroy();
        return;
      }
      serverSaw = (s.getPeerCertificate() as PeerCertificate).subjectaltname ?? '';
      s.end('hi');
    },
  );
  srv.on('tlsClientError', () => {});
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  try {
    return await new Promise((resolve) => {
      const s = connect({
        host: '127.0.0.1',
        port,
        cert: client.cert,
        key: client.key,
        ca: trust.client,
        // Istio peers match the URI SAN, not a host name.
        checkServerIdentity: (_host, cert) =>
          cert.subjectaltname === `URI:${SERVER}` ? undefined : new Error(`unexpected server identity ${cert.subjectaltname}`),
      });
      s.on('data', () => {
        resolve({ serverSaw, clientSaw: s.getPeerCertificate().subjectaltname ?? '' });
        s.end();
      });
      // In TLS 1.3 the client may finish first and learn of the server's refusal only as a close.
      const refused = (why: string): void => {
        setImmediate(() => resolve(new Error(serverError ? `server refused the client: ${serverError}` : why)));
      };
      s.on('error', (err) => refused(err.message));
      s.on('end', () => refused('closed before data'));
    });
  } finally {
    srv.close();
  }
}

before(async () => {
  dir = await tempDir();
  ca = await IstioCa.create({ trustDomain: 'cluster.local', caDir: path.join(dir.path, 'a'), logger: logs.logger });
  otherCa = await IstioCa.create({ trustDomain: 'cluster.local', caDir: path.join(dir.path, 'b'), logger: logs.logger });
});
after(async () => {
  logs.assertNoPrivateKey();
  await dir.remove();
});

describe('mTLS between workloads with issued certificates', () => {
  it('succeeds with both certificates from our root; each side sees the peer SPIFFE ID', async () => {
    const r = await handshake(await workload(ca, SERVER), await workload(ca, CLIENT), {
      server: ca.trustBundlePem(),
      client: ca.trustBundlePem(),
    });
    assert.ok(!(r instanceof Error), String(r));
    assert.equal(r.serverSaw, `URI:${CLIENT}`);
    assert.equal(r.clientSaw, `URI:${SERVER}`);
  });

  it('fails when the client certificate comes from another root', async () => {
    const r = await handshake(await workload(ca, SERVER), await workload(otherCa, CLIENT), {
      server: ca.trustBundlePem(),
      client: ca.trustBundlePem(),
    });
    assert.ok(r instanceof Error, 'the handshake must fail');
    assert.match(r.message, /server refused the client: (UNABLE_TO_GET_ISSUER_CERT_LOCALLY|UNABLE_TO_VERIFY_LEAF_SIGNATURE)/);
  });

  it('fails when the server certificate comes from another root', async () => {
    const r = await handshake(await workload(otherCa, SERVER), await workload(ca, CLIENT), {
      server: ca.trustBundlePem(),
      client: ca.trustBundlePem(),
    });
    assert.ok(r instanceof Error);
    assert.match(r.message, /self[- ]signed|unable to verify|unable to get/i);
  });
});
