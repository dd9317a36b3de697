import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import path from 'node:path';
import type { PeerCertificate } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey } from 'jose';
import { IstioCa } from '../ca/istio-ca.js';
import { x509 } from '../crypto.js';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../test-helpers.js';
import { authenticate, bearerToken, type AuthContext } from './authenticator.js';
import { clientCertAuthenticator } from './client-cert.js';
import { impersonationRefusal, parseTrustedNodeAccounts } from './impersonation.js';
import { jwtAuthenticator } from './jwt-authenticator.js';
import { parseJwtRule } from './jwt-rule.js';
import { kubeTokenAuthenticator } from './token-review.js';

const logs = captureLogs();
let dir: TempDir;
let ca: IstioCa;
let key: { privateKey: JoseKey; publicKey: JoseKey };
let https: Server;
let origin = '';
let jwksFetches = 0;

const ctx = (md: Record<string, string> = {}, peerCertificate?: PeerCertificate): AuthContext => {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return { metadata, peer: 'ipv4:127.0.0.1:1', ...(peerCertificate ? { peerCertificate } : {}) };
};

const sign = (iss: string, kid = 'k1', sub = 'system:serviceaccount:foo:client'): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid })
    .setIssuer(iss)
    .setAudience('istio-ca')
    .setSubject(sub)
    .setExpirationTime('5m')
    .sign(key.privateKey);

before(async () => {
  dir = await tempDir();
  ca = await IstioCa.create({ trustDomain: 'cluster.local', caDir: path.join(dir.path, 'ca'), logger: logs.logger });
  key = await generateKeyPair('ES256', { extractable: true });
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'ES256' }] });
  const serving = await ca.generateKeyCert(['127.0.0.1'], 3_600_000);
  https = createServer({ cert: serving.certChainPem, key: serving.privateKeyPem }, (req, res) => {
    if (req.url === '/.well-known/openid-configuration') res.end(JSON.stringify({ issuer: origin, jwks_uri: `${origin}/keys` }));
    else if (req.url === '/keys') {
      jwksFetches++;
      res.end(jwks);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => https.listen(0, '127.0.0.1', r));
  origin = `https://127.0.0.1:${(https.address() as { port: number }).port}`;
});
after(async () => {
  https.close();
  logs.assertNoPrivateKey();
  await dir.remove();
});

describe('JWT_RULE', () => {
  it("reads istiod's snake_case form, case-insensitively, and our inline jwks", () => {
    assert.deepEqual(parseJwtRule('{"issuer": "foo", "jwks_uri": "https://x/keys", "audiences": ["aud1", "aud2"]}'), {
      issuer: 'foo',
      audiences: ['aud1', 'aud2'],
      jwksUri: 'https://x/keys',
    });
    assert.equal(parseJwtRule('{"Issuer": "foo", "Audiences": ["a"], "jwksUri": "file:///k.json"}').jwksUri, 'file:///k.json');
    assert.equal(parseJwtRule('{"issuer": "foo", "audiences": ["a"], "jwks": {"keys": []}}').jwks, '{"keys":[]}');
  });

  it('says what is wrong', () => {
    assert.throws(() => parseJwtRule('invalid'), /JWT_RULE: not JSON/);
    assert.throws(
      () => parseJwtRule('{"issuer": "foo", "jwks_uri": "baz", "audiences": "aud1"}'),
      /"audiences" must be a non-empty list of strings/,
    );
    assert.throws(
      () => parseJwtRule('{"issuer": "foo", "audiences": ["a"], "jwks_uri": "http://x"}'),
      /must be an https:\/\/ or file:\/\/ URL/,
    );
    assert.throws(() => parseJwtRule('{"issuer": "foo", "audiences": ["a"], "jwks_url": "https://x"}'), /unknown field "jwks_url"/);
    assert.throws(() => parseJwtRule('{"audiences": ["a"]}'), /"issuer" must be a non-empty string/);
    assert.throws(() => parseJwtRule('{"issuer": "foo", "audiences": ["a"], "jwks": "{}"}'), /"jwks" is not a JWKS/);
  });
});

describe('JWT authenticator', () => {
  it('finds the keys by OIDC discovery when there is no jwks_uri (https, our CA trusted)', async () => {
    const a = jwtAuthenticator({ issuer: origin, audiences: ['istio-ca'] }, { trustDomain: 'example.org', caCerts: ca.trustBundlePem() });
    const r = await a.authenticate(ctx({ authorization: `Bearer ${await sign(origin)}` }));
    assert.deepEqual(r, { ok: true, caller: { source: 'IDToken', identities: ['spiffe://example.org/ns/foo/sa/client'] } });
  });

  it('fetches an https JWKS once, again for an unknown key only after the cooldown', async () => {
    const a = jwtAuthenticator(
      { issuer: 'iss', audiences: ['istio-ca'], jwksUri: `${origin}/keys` },
      { trustDomain: 'cluster.local', caCerts: ca.trustBundlePem(), cooldownMs: 60_000 },
    );
    const before = jwksFetches;
    for (let i = 0; i < 3; i++) assert.equal((await a.authenticate(ctx({ authorization: `Bearer ${await sign('iss')}` }))).ok, true);
    const unknown = await a.authenticate(ctx({ authorization: `Bearer ${await sign('iss', 'k2')}` }));
    assert.equal(unknown.ok, false);
    assert.equal(jwksFetches - before, 1);
  });

  it('does not trust an https JWKS whose certificate it cannot verify', async () => {
    const a = jwtAuthenticator({ issuer: 'iss', audiences: ['istio-ca'], jwksUri: `${origin}/keys` }, { trustDomain: 'cluster.local' });
    const r = await a.authenticate(ctx({ authorization: `Bearer ${await sign('iss')}` }));
    assert.ok(!r.ok);
    assert.match(r.reason, /cannot be verified .*(self[- ]signed|unable to|certificate)/i);
  });

  it('re-reads a file JWKS when it changes', async () => {
    const file = await dir.file('k.json', JSON.stringify({ keys: [] }));
    const a = jwtAuthenticator({ issuer: 'iss', audiences: ['istio-ca'], jwksUri: `file://${file}` }, { trustDomain: 'cluster.local' });
    const t = await sign('iss');
    assert.equal((await a.authenticate(ctx({ authorization: `Bearer ${t}` }))).ok, false);
    await dir.file('k.json', JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'ES256' }] }));
    assert.equal((await a.authenticate(ctx({ authorization: `Bearer ${t}` }))).ok, true);
  });

  it('reads only "Bearer <token>" authorization metadata', () => {
    assert.deepEqual(bearerToken(ctx({ authorization: 'Bearer abc' }).metadata), { token: 'abc' });
    assert.ok('error' in bearerToken(ctx({ authorization: 'Basic abc' }).metadata));
    assert.ok('error' in bearerToken(ctx().metadata));
  });
});

describe('client certificate authenticator', () => {
  const peer = (pem: string): PeerCertificate => {
    const c = new x509.X509Certificate(pem);
    return { raw: Buffer.from(c.rawData), valid_from: c.notBefore.toUTCString(), valid_to: c.notAfter.toUTCString() } as PeerCertificate;
  };

  it('takes SPIFFE IDs of our trust domain only', async () => {
    const csr = await makeCsr();
    const ours = (await ca.sign(csr.csrPem, { subjectIds: ['spiffe://cluster.local/ns/a/sa/b'] }))[0]!;
    const foreign = (await ca.sign(csr.csrPem, { subjectIds: ['spiffe://other.org/ns/a/sa/b'] }))[0]!;
    const dns = (await ca.sign(csr.csrPem, { subjectIds: ['a.example.com'] }))[0]!;
    const a = clientCertAuthenticator('cluster.local');
    assert.deepEqual(await a.authenticate(ctx({}, peer(ours))), {
      ok: true,
      caller: { source: 'ClientCertificate', identities: ['spiffe://cluster.local/ns/a/sa/b'] },
    });
    assert.deepEqual(await a.authenticate(ctx({}, peer(foreign))), {
      ok: false,
      reason: 'no SPIFFE ID of trust domain cluster.local in the client certificate (has spiffe://other.org/ns/a/sa/b)',
    });
    assert.deepEqual(await a.authenticate(ctx({}, peer(dns))), { ok: false, reason: 'the client certificate has no SPIFFE ID' });
  });
});

describe('Kubernetes TokenReview slot and the authenticator chain', () => {
  it('maps a reviewed service-account token to its SPIFFE ID and passes ClusterID', async () => {
    const seen: (string | undefined)[] = [];
    const kube = kubeTokenAuthenticator({
      trustDomain: 'cluster.local',
      audiences: ['istio-ca'],
      review: (token, aud, cluster) => {
        seen.push(cluster);
        return Promise.resolve(
          token === 'good'
            ? { authenticated: true, username: 'system:serviceaccount:ns1:sa1', groups: ['system:serviceaccounts'], audiences: aud }
            : { authenticated: false, error: 'token expired' },
        );
      },
    });
    const c = { ...ctx({ authorization: 'Bearer good' }), clusterId: 'Kubernetes' };
    assert.deepEqual(await authenticate(c, [clientCertAuthenticator('cluster.local'), kube]), {
      ok: true,
      caller: { source: 'KubernetesToken', identities: ['spiffe://cluster.local/ns/ns1/sa/sa1'] },
    });
    assert.deepEqual(seen, ['Kubernetes']);
    const bad = await authenticate(ctx({ authorization: 'Bearer bad' }), [clientCertAuthenticator('cluster.local'), kube]);
    assert.deepEqual(bad, {
      ok: false,
      reason:
        'ClientCertAuthenticator: no verified client certificate is presented; KubeJWTAuthenticator: the token review failed: token expired',
    });
  });
});

describe('impersonation policy', () => {
  it('parses CA_TRUSTED_NODE_ACCOUNTS and allows only listed callers, in our trust domain', async () => {
    const { accounts, invalid } = parseTrustedNodeAccounts('istio-system/ztunnel, bad, a/b/c,kube-system/node-proxy');
    assert.deepEqual(accounts, [
      { namespace: 'istio-system', serviceAccount: 'ztunnel' },
      { namespace: 'kube-system', serviceAccount: 'node-proxy' },
    ]);
    assert.deepEqual(invalid, ['bad', 'a/b/c']);
    const policy = { trustDomain: 'cluster.local', trusted: accounts };
    const ztunnel = { source: 'IDToken' as const, identities: ['spiffe://cluster.local/ns/istio-system/sa/ztunnel'] };
    assert.equal(await impersonationRefusal(policy, ztunnel, 'spiffe://cluster.local/ns/a/sa/b'), undefined);
    assert.match(
      (await impersonationRefusal(policy, ztunnel, 'spiffe://x.org/ns/a/sa/b'))!,
      /not a SPIFFE ID of trust domain cluster.local/,
    );
    assert.match(
      (await impersonationRefusal(
        policy,
        { source: 'IDToken', identities: ['spiffe://cluster.local/ns/a/sa/b'] },
        'spiffe://cluster.local/ns/c/sa/d',
      ))!,
      /not a trusted node account/,
    );
    assert.match(
      (await impersonationRefusal({ trustDomain: 'cluster.local', trusted: [] }, ztunnel, 'spiffe://cluster.local/ns/a/sa/b'))!,
      /CA_TRUSTED_NODE_ACCOUNTS/,
    );
  });
});
