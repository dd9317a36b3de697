import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey } from 'jose';
import { sanUris } from '../ca/certificates.js';
import { IstioCa } from '../ca/istio-ca.js';
import { parseCertificates, x509 } from '../crypto.js';
import { startSecureGrpc, type RunningSecureGrpc } from '../secure-grpc.js';
import { captureLogs, makeCsr, openssl, tempDir, writeChainFiles, type TempDir } from '../test-helpers.js';
import { callCreateCertificate, expectCsrError, type CsrCallOptions, type CsrCallResult } from './test-client.js';

const ISSUER = 'https://issuer.test';
const CLIENT = 'spiffe://cluster.local/ns/foo/sa/client';
const logs = captureLogs();
let dir: TempDir;
let good: { privateKey: JoseKey; publicKey: JoseKey };
let forged: { privateKey: JoseKey; publicKey: JoseKey };
let fileServer: RunningSecureGrpc;
let httpsServer: RunningSecureGrpc;
let jwksHttps: Server;
let root: string;

async function token(
  claims: { sub?: string; iss?: string; aud?: string | string[]; expSeconds?: number; key?: JoseKey; kid?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: claims.kid ?? 'k1' })
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? 'istio-ca')
    .setSubject(claims.sub ?? 'system:serviceaccount:foo:client')
    .setIssuedAt(now - 60)
    .setExpirationTime(now + (claims.expSeconds ?? 600));
  return jwt.sign(claims.key ?? good.privateKey);
}

const call = async (
  server: RunningSecureGrpc,
  o: Omit<CsrCallOptions, 'address' | 'rootPem' | 'csrPem'> & { csrPem?: string },
): Promise<CsrCallResult> =>
  callCreateCertificate({ address: server.address, rootPem: root, csrPem: o.csrPem ?? (await makeCsr()).csrPem, ...o });

function expectOk(r: CsrCallResult): string[] {
  assert.ok(r.ok, r.ok ? '' : `${grpc.status[r.code]}: ${r.details}`);
  return r.certChain;
}

const expectError = expectCsrError;

before(async () => {
  dir = await tempDir();
  good = await generateKeyPair('ES256', { extractable: true });
  forged = await generateKeyPair('ES256', { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(good.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] });
  const jwksFile = await dir.file('jwks.json', jwks);
  const caDir = path.join(dir.path, 'ca');
  // The https JWKS server's own certificate comes from the same (persisted) root.
  const ca = await IstioCa.create({ trustDomain: 'cluster.local', caDir, logger: logs.logger });
  const serving = await ca.generateKeyCert(['127.0.0.1'], 3_600_000);
  jwksHttps = createServer({ cert: serving.certChainPem, key: serving.privateKeyPem }, (req, res) => {
    res.writeHead(req.url === '/jwks' ? 200 : 404, { 'content-type': 'application/json' }).end(req.url === '/jwks' ? jwks : '{}');
  });
  await new Promise<void>((r) => jwksHttps.listen(0, '127.0.0.1', r));
  const httpsPort = (jwksHttps.address() as { port: number }).port;
  const common = {
    ca: { trustDomain: 'cluster.local', caDir, caCertsDir: path.join(dir.path, 'no-cacerts') },
    listen: { host: '127.0.0.1', port: 0 },
    namespace: 'istio-system',
    customHosts: ['meshpilot.example.com'],
    trustedNodeAccounts: [{ namespace: 'istio-system', serviceAccount: 'ztunnel' }],
    logger: logs.logger,
  };
  fileServer = await startSecureGrpc({
    ...common,
    jwtRule: { issuer: ISSUER, audiences: ['istio-ca', 'other'], jwksUri: pathToFileURL(jwksFile).href },
  });
  httpsServer = await startSecureGrpc({
    ...common,
    jwtRule: { issuer: ISSUER, audiences: ['istio-ca'], jwksUri: `https://127.0.0.1:${httpsPort}/jwks` },
    jwks: { caCerts: ca.trustBundlePem() },
  });
  root = fileServer.ca.trustBundlePem();
});

after(async () => {
  for (const s of [fileServer, httpsServer]) {
    s?.close();
    s?.server.server.forceShutdown();
  }
  jwksHttps?.close();
  logs.assertNoPrivateKey();
  await dir?.remove();
});

describe('CreateCertificate over TLS', () => {
  it('a JWT from a file JWKS gets a certificate for its service account, whatever the CSR asks for', async () => {
    const csr = await makeCsr({ sans: ['spiffe://cluster.local/ns/istio-system/sa/istiod', 'istiod.istio-system.svc'], cn: 'admin' });
    const chain = expectOk(await call(fileServer, { token: await token(), csrPem: csr.csrPem, ttlSeconds: 3600 }));
    assert.equal(chain.length, 2, 'leaf, root');
    assert.equal(chain[chain.length - 1], root, 'the trust bundle is last');
    const leaf = new x509.X509Certificate(chain[0]!);
    assert.deepEqual(sanUris(leaf), [CLIENT]);
    assert.equal(leaf.getExtension(x509.SubjectAlternativeNameExtension)?.names.items.length, 1, 'no DNS SAN from the CSR');
    assert.equal(leaf.notAfter.getTime() - leaf.notBefore.getTime(), 3600_000 + 120_000);
    const files = await writeChainFiles(dir, chain, 'jwt');
    const v = await openssl(['verify', '-CAfile', files.root, files.leaf]);
    assert.equal(v.code, 0, v.stderr);
  });

  it('a JWT checked against an https JWKS on loopback works the same', async () => {
    const chain = expectOk(await call(httpsServer, { token: await token({ sub: 'system:serviceaccount:bar:web' }) }));
    assert.deepEqual(sanUris(new x509.X509Certificate(chain[0]!)), ['spiffe://cluster.local/ns/bar/sa/web']);
  });

  it('renewal with the current client certificate keeps the identity (no token)', async () => {
    const csr = await makeCsr();
    const first = expectOk(await call(fileServer, { token: await token(), csrPem: csr.csrPem }));
    const next = await makeCsr();
    const renewed = expectOk(
      await call(fileServer, { clientCert: { certChainPem: first.slice(0, -1).join(''), keyPem: csr.keyPem }, csrPem: next.csrPem }),
    );
    assert.deepEqual(sanUris(new x509.X509Certificate(renewed[0]!)), [CLIENT]);
  });

  it('serves a certificate for istiod.<ns>.svc and the custom hosts, with the chain up to the root', async () => {
    const { connect } = await import('node:tls');
    const [host, port] = fileServer.address.split(':') as [string, string];
    const chain = await new Promise<string[]>((resolve, reject) => {
      const s = connect({ host, port: Number(port), servername: 'istiod.istio-system.svc', ca: root, ALPNProtocols: ['h2'] }, () => {
        const out: string[] = [];
        for (let c = s.getPeerCertificate(true); c?.raw; c = c.issuerCertificate === c ? (undefined as never) : c.issuerCertificate) {
          out.push(c.subjectaltname ?? `root:${c.subject?.O ?? ''}`);
          if (c.issuerCertificate === c) break;
        }
        s.end();
        resolve(out);
      });
      s.on('error', reject);
    });
    assert.equal(chain.length, 2);
    assert.equal(
      chain[0],
      'DNS:istio-pilot.istio-system.svc, DNS:istiod-remote.istio-system.svc, DNS:istiod.istio-system.svc, DNS:meshpilot.example.com',
    );
    assert.equal(chain[1], 'root:cluster.local');
  });
});

describe('CreateCertificate refusals: a clear error and nothing issued', () => {
  let issuedBefore = 0;
  before(() => {
    issuedBefore = fileServer.csrStats().issued;
  });
  after(() => {
    assert.equal(fileServer.csrStats().issued, issuedBefore, 'no certificate was issued by a refused request');
  });

  it('no credentials at all', async () => {
    expectError(
      await call(fileServer, {}),
      grpc.status.UNAUTHENTICATED,
      /request authenticate failure: ClientCertAuthenticator: no verified client certificate is presented; IDTokenAuthenticator: no bearer token in the authorization metadata/,
    );
  });

  it('expired, wrong-issuer, wrong-audience and forged JWTs', async () => {
    const cases: [Parameters<typeof token>[0], RegExp][] = [
      [{ expSeconds: -30 }, /the token has expired/],
      [{ iss: 'https://evil.test' }, /the token issuer does not match/],
      [{ aud: 'someone-else' }, /the token audience does not match/],
      [{ key: forged.privateKey }, /the token signature is invalid/],
      [{ key: forged.privateKey, kid: 'unknown' }, /no key of the issuer matches the token/],
      [{ sub: 'alice' }, /invalid sub "alice"/],
    ];
    for (const [claims, re] of cases) expectError(await call(fileServer, { token: await token(claims) }), grpc.status.UNAUTHENTICATED, re);
    expectError(await call(fileServer, { token: 'not.a.jwt' }), grpc.status.UNAUTHENTICATED, /the token is malformed/);
  });

  it('a client certificate from another root', async () => {
    const other = await IstioCa.create({ trustDomain: 'cluster.local', caDir: path.join(dir.path, 'other-ca'), logger: logs.logger });
    const csr = await makeCsr();
    const chain = await other.sign(csr.csrPem, { subjectIds: [CLIENT] });
    expectError(
      await call(fileServer, { clientCert: { certChainPem: chain[0]!, keyPem: csr.keyPem } }),
      grpc.status.UNAUTHENTICATED,
      /no verified client certificate is presented/,
    );
  });

  it('garbage CSR, weak-key CSR, TTL over the max', async () => {
    const t = await token();
    expectError(
      await call(fileServer, { token: t, csrPem: 'garbage' }),
      grpc.status.INVALID_ARGUMENT,
      /^CSR signing error \(failed to decode the CSR/,
    );
    const weak = await makeCsr({ key: { kind: 'rsa', bits: 1024 } });
    expectError(
      await call(fileServer, { token: t, csrPem: weak.csrPem }),
      grpc.status.INVALID_ARGUMENT,
      /RSA key of 1024 bits is too weak/,
    );
    expectError(
      await call(fileServer, { token: t, ttlSeconds: 100 * 86_400 }),
      grpc.status.INVALID_ARGUMENT,
      /requested TTL 2400h0m0s is greater than the max allowed TTL 2160h0m0s/,
    );
  });

  it('impersonation by a caller that is not a trusted node account', async () => {
    expectError(
      await call(fileServer, { token: await token(), metadata: { ImpersonatedIdentity: 'spiffe://cluster.local/ns/bar/sa/db' } }),
      grpc.status.UNAUTHENTICATED,
      /^request impersonation authentication failure$/,
    );
    assert.ok(
      logs.lines.some((l) => l.includes('is not a trusted node account')),
      'the reason is logged',
    );
  });
});

describe('impersonation by a trusted node account', () => {
  it('gets the impersonated identity, and only one of our trust domain', async () => {
    const t = await token({ sub: 'system:serviceaccount:istio-system:ztunnel' });
    const chain = expectOk(await call(fileServer, { token: t, metadata: { ImpersonatedIdentity: 'spiffe://cluster.local/ns/bar/sa/db' } }));
    assert.deepEqual(sanUris(new x509.X509Certificate(chain[0]!)), ['spiffe://cluster.local/ns/bar/sa/db']);
    expectError(
      await call(fileServer, { token: t, metadata: { ImpersonatedIdentity: 'spiffe://other.domain/ns/bar/sa/db' } }),
      grpc.status.UNAUTHENTICATED,
      /impersonation/,
    );
    assert.equal(parseCertificates(chain[1]!, 'root').length, 1);
  });
});
