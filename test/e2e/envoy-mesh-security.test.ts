/**
 * meshpilot's sidecar security proven with real Envoy sidecars and real HTTP between pods in
 * network namespaces (test/support/envoy-mesh): mutual TLS with workload certificates from
 * meshpilot's CA over the agent's SDS, PeerAuthentication against a pod without a sidecar,
 * AuthorizationPolicy (Envoy's RBAC answers 403) and RequestAuthentication (401 for a bad JWT).
 * Policies select the echo pods; each test removes its own before the next.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { netnsSkipReason } from '../support/cni/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import { NS, OTHER_NS, WORKLOADS, host, istio, showTally, spiffe, useEnvoyMesh } from '../support/envoy-mesh/fixture.js';
import type { EnvoyMesh } from '../support/envoy-mesh/mesh.js';
import type { RequestBatch, Tally } from '../support/envoy-mesh/netns-apps.js';

const skip = netnsSkipReason() ?? envoySkipReason();
let mesh: EnvoyMesh;

const show = showTally;
const onEcho = { matchLabels: { app: 'echo' } };
const echoUrl = (path = '/'): string => mesh.url('echo', NS, path);
/** The echo-v1 pod itself, as a client outside the mesh dials it. */
const echoPodUrl = (path = '/'): string => `http://${WORKLOADS.find((w) => w.name === 'echo-v1')!.ip}:8080${path}`;
const run = (from: string, batch: RequestBatch): Promise<Tally> => mesh.pod(from).client.run(batch);

/** Waits until both echo sidecars' listeners satisfy `ok` (a policy reached every endpoint, not just one). */
const echoListeners = (ok: (dump: string) => boolean): Promise<void> => mesh.untilConfig(['echo-v1', 'echo-v2'], 'dynamic_listeners', ok);

/** Sum of the echo pods' Envoy counters matching `re`. */
async function echoStat(re: RegExp): Promise<number> {
  let sum = 0;
  for (const pod of ['echo-v1', 'echo-v2']) for (const v of (await mesh.stats(pod, re)).values()) sum += v;
  return sum;
}

describe('mTLS, PeerAuthentication, AuthorizationPolicy and RequestAuthentication through real Envoy sidecars', { skip }, () => {
  const started = useEnvoyMesh();
  before(() => {
    mesh = started();
  });

  it('sidecars talk mTLS with certificates from meshpilot CA: handshakes on the server side, the client SPIFFE id in XFCC', async () => {
    const before = await echoStat(/^listener\..*\.ssl\.handshake$/);
    const t = await mesh.until('sleep', { url: echoUrl(), n: 20 }, (x) => x.statuses['200'] === 20);
    assert.ok((await echoStat(/^listener\..*\.ssl\.handshake$/)) > before, 'the echo sidecars completed TLS handshakes');
    for (const s of t.samples) {
      const seen = JSON.parse(s.body) as { headers: Record<string, string> };
      const xfcc = seen.headers['x-forwarded-client-cert'] ?? '';
      assert.match(xfcc, new RegExp(`By=${spiffe(NS, 'echo')};.*URI=${spiffe(NS, 'sleep')}`), xfcc);
    }
    // The serving certificate came over SDS from the agent, signed by meshpilot's CA.
    const certs = JSON.parse(await mesh.pod('echo-v1').sidecar!.envoy.admin('certs')) as {
      certificates: { ca_cert: { serial_number: string }[]; cert_chain: { subject_alt_names: { uri?: string }[] }[] }[];
    };
    const sans = certs.certificates.flatMap((c) => c.cert_chain.flatMap((x) => x.subject_alt_names.map((n) => n.uri)));
    assert.ok(sans.includes(spiffe(NS, 'echo')), JSON.stringify(sans));
    const rootSerial = new X509Certificate(mesh.meshpilot.rootPem).serialNumber.toLowerCase();
    assert.ok(
      certs.certificates.some((c) => c.ca_cert.some((ca) => ca.serial_number.toLowerCase() === rootSerial)),
      'the validation context is meshpilot root',
    );
  });

  it('PERMISSIVE accepts both a sidecar client (mTLS) and a pod without sidecar (plaintext)', async () => {
    await mesh.apply('peer-auth.yaml', [istio('PeerAuthentication', 'echo', { selector: onEcho, mtls: { mode: 'PERMISSIVE' } })]);
    const plain = await mesh.until('plain', { url: echoPodUrl(), n: 10 }, (x) => x.statuses['200'] === 10);
    const seen = JSON.parse(plain.samples[0]!.body) as { headers: Record<string, string> };
    assert.equal(seen.headers['x-forwarded-client-cert'], undefined, 'plaintext: no client certificate');
    const meshed = await run('sleep', { url: echoUrl(), n: 10 });
    assert.deepEqual(meshed.statuses, { 200: 10 }, show(meshed));
  });

  it('STRICT refuses the plaintext client and a sidecar with TLS turned off; the mTLS sidecar client gets through', async () => {
    await mesh.apply('peer-auth.yaml', [istio('PeerAuthentication', 'echo', { selector: onEcho, mtls: { mode: 'STRICT' } })]);
    const plain = await mesh.until('plain', { url: echoPodUrl(), n: 10 }, (x) => x.statuses['200'] === undefined && x.n === 10);
    assert.equal(
      Object.values(plain.errors).reduce((a, b) => a + b, 0),
      10,
      `every plaintext request failed at the connection: ${show(plain)}`,
    );
    const meshed = await run('sleep', { url: echoUrl(), n: 10 });
    assert.deepEqual(meshed.statuses, { 200: 10 }, show(meshed));
    // A DestinationRule turning the client sidecar's TLS off makes it a plaintext client too.
    await mesh.apply('tls-off.yaml', [
      istio('DestinationRule', 'echo', { host: host('echo'), trafficPolicy: { tls: { mode: 'DISABLE' } } }),
    ]);
    const refused = await mesh.until('sleep', { url: echoUrl(), n: 10 }, (x) => x.statuses['503'] === 10);
    assert.match(refused.samples[0]!.body, /upstream connect error|reset/, show(refused));
    await mesh.apply('tls-off.yaml', undefined);
    await mesh.until('sleep', { url: echoUrl(), n: 10 }, (x) => x.statuses['200'] === 10);
    await mesh.apply('peer-auth.yaml', undefined);
    await mesh.until('plain', { url: echoPodUrl(), n: 1 }, (x) => x.statuses['200'] === 1);
  });

  it('AuthorizationPolicy ALLOW by principal, namespace, path and method, and DENY by path: 403 from Envoy RBAC', async () => {
    await mesh.apply('authz.yaml', [
      istio('AuthorizationPolicy', 'allow', {
        selector: onEcho,
        rules: [
          {
            from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/sleep`] } }],
            to: [{ operation: { methods: ['GET'], paths: ['/api/*'] } }],
          },
          { from: [{ source: { namespaces: [OTHER_NS] } }], to: [{ operation: { paths: ['/public'] } }] },
        ],
      }),
      istio('AuthorizationPolicy', 'deny', {
        selector: onEcho,
        action: 'DENY',
        rules: [{ to: [{ operation: { paths: ['/api/secret'] } }] }],
      }),
    ]);
    await echoListeners((d) => d.includes('policy[allow]') && d.includes('policy[deny]'));
    // Connections opened before the update serve one last response on the old filter chain.
    await mesh.until('sleep', { url: echoUrl('/api/data'), n: 20, method: 'POST' }, (x) => x.statuses['403'] === 20);
    const cases: [string, string, string, number][] = [
      ['sleep', 'GET', '/api/data', 200],
      ['sleep', 'POST', '/api/data', 403],
      ['sleep', 'GET', '/public', 403],
      ['sleep', 'GET', '/api/secret', 403],
      ['mirror', 'GET', '/public', 200],
      ['mirror', 'GET', '/api/data', 403],
    ];
    const denied = await echoStat(/rbac\.denied$/);
    const got: string[] = [];
    for (const [from, method, path, status] of cases) {
      const t = await run(from, { url: echoUrl(path), n: 10, method });
      got.push(`${from} ${method} ${path}: ${JSON.stringify(t.statuses)}`);
      assert.deepEqual(t.statuses, { [status]: 10 }, got.join('\n'));
      if (status === 403) assert.equal(t.samples[0]!.body, 'RBAC: access denied');
    }
    assert.equal((await echoStat(/rbac\.denied$/)) - denied, 40, 'the echo sidecars denied 4 × 10 requests');
    await mesh.apply('authz.yaml', undefined);
    await echoListeners((d) => !d.includes('policy[allow]') && !d.includes('policy[deny]'));
    await mesh.until('sleep', { url: echoUrl('/api/secret'), n: 20 }, (x) => x.statuses['200'] === 20);
  });

  it('RequestAuthentication (inline JWKS): a valid token passes, a forged or expired one gets 401, none passes unless a policy requires one', async () => {
    const ISSUER = 'https://jwt.meshpilot.test';
    const now = Math.floor(Date.now() / 1000);
    const jwt = (k: CryptoKey, exp: number): Promise<string> =>
      new SignJWT({ scope: 'echo' })
        .setProtectedHeader({ alg: 'ES256', kid: 'mesh' })
        .setIssuer(ISSUER)
        .setSubject('tester')
        .setIssuedAt(exp - 3600)
        .setExpirationTime(exp)
        .sign(k);
    const keys = await generateKeyPair('ES256');
    const forger = (await generateKeyPair('ES256')).privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(keys.publicKey)), kid: 'mesh', alg: 'ES256', use: 'sig' }] });
    await mesh.apply('request-authn.yaml', [
      istio('RequestAuthentication', 'echo-jwt', { selector: onEcho, jwtRules: [{ issuer: ISSUER, jwks }] }),
    ]);
    const bearer = async (k: CryptoKey, exp: number) => ({ authorization: `Bearer ${await jwt(k, exp)}` });
    const forged = await bearer(forger, now + 3600);
    await echoListeners((d) => d.includes(ISSUER));
    await mesh.until('sleep', { url: echoUrl(), n: 20, headers: forged }, (x) => x.statuses['401'] === 20);
    const valid = await run('sleep', { url: echoUrl(), n: 10, headers: await bearer(keys.privateKey, now + 3600) });
    const bad = await run('sleep', { url: echoUrl(), n: 10, headers: forged });
    const expired = await run('sleep', { url: echoUrl(), n: 10, headers: await bearer(keys.privateKey, now - 600) });
    // Istio semantics: RequestAuthentication rejects bad tokens; requiring one is AuthorizationPolicy's job.
    const none = await run('sleep', { url: echoUrl(), n: 10 });
    assert.deepEqual(
      [valid.statuses, bad.statuses, expired.statuses, none.statuses],
      [{ 200: 10 }, { 401: 10 }, { 401: 10 }, { 200: 10 }],
      [valid, bad, expired, none].map(show).join('\n'),
    );
    assert.match(bad.samples[0]!.body, /Jwt verification fails/);
    assert.match(expired.samples[0]!.body, /Jwt is expired/);
    // Requiring a token is an AuthorizationPolicy on the request principal (`<iss>/<sub>`).
    await mesh.apply('require-jwt.yaml', [
      istio('AuthorizationPolicy', 'require-jwt', {
        selector: onEcho,
        rules: [{ from: [{ source: { requestPrincipals: [`${ISSUER}/tester`] } }] }],
      }),
    ]);
    await echoListeners((d) => d.includes('policy[require-jwt]'));
    await mesh.until('sleep', { url: echoUrl(), n: 20 }, (x) => x.statuses['403'] === 20);
    const withToken = await run('sleep', { url: echoUrl(), n: 10, headers: await bearer(keys.privateKey, now + 3600) });
    assert.deepEqual(withToken.statuses, { 200: 10 }, show(withToken));
    const seen = JSON.parse(withToken.samples[0]!.body) as { headers: Record<string, string> };
    assert.equal(seen.headers.authorization, undefined, 'Envoy strips a verified token before the app (forward: false)');
    await mesh.apply('require-jwt.yaml', undefined);
    await echoListeners((d) => !d.includes('policy[require-jwt]'));
    await mesh.apply('request-authn.yaml', undefined);
    await echoListeners((d) => !d.includes(ISSUER));
    await mesh.until('sleep', { url: echoUrl(), n: 20, headers: forged }, (x) => x.statuses['200'] === 20);
  });
});
