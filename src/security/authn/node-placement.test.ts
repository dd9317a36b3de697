/**
 * Impersonation with the node check, through the CSR service over TLS as ztunnel calls it: a
 * bearer Kubernetes token reviewed by a TokenReviewer that answers as the API server does for
 * pod-bound tokens (signature and expiry verified against the "cluster's" signing key; username,
 * groups, audiences and the pod-name / pod-uid / node-name extras from the token's claims). The
 * same rules against a real kube-apiserver: test/e2e/kube-node-authorization.test.ts.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { errors as joseErrors, generateKeyPair, jwtVerify, SignJWT, type CryptoKey as JoseKey } from 'jose';
import { sanUris } from '../ca/certificates.js';
import { x509 } from '../crypto.js';
import { startSecureGrpc, type RunningSecureGrpc } from '../secure-grpc.js';
import { captureLogs, makeCsr, tempDir, type TempDir } from '../test-helpers.js';
import { callCreateCertificate, expectCsrError, type CsrCallResult } from '../csr/test-client.js';
import type { Caller } from './authenticator.js';
import { nodePlacement, type PlacedPod, type PodPlacements } from './node-placement.js';
import type { TokenReviewer } from './token-review.js';

const ISSUER = 'https://kubernetes.default.svc.cluster.local';
const logs = captureLogs();
let dir: TempDir;
let clusterKey: { privateKey: JoseKey; publicKey: JoseKey };
let otherKey: { privateKey: JoseKey; publicKey: JoseKey };
let server: RunningSecureGrpc;

interface TestPod extends PlacedPod {
  readonly namespace: string;
  readonly name: string;
  readonly failed?: boolean;
}

/** Pods as the registry would hold them: ztunnel-a and app on node-a, db on node-b. */
const PODS: TestPod[] = [
  { namespace: 'istio-system', name: 'ztunnel-a', uid: 'uid-zt-a', serviceAccount: 'ztunnel', nodeName: 'node-a' },
  { namespace: 'istio-system', name: 'ztunnel-b', uid: 'uid-zt-b', serviceAccount: 'ztunnel', nodeName: 'node-b' },
  { namespace: 'shop', name: 'app-1', uid: 'uid-app', serviceAccount: 'app', nodeName: 'node-a' },
  { namespace: 'shop', name: 'db-1', uid: 'uid-db', serviceAccount: 'db', nodeName: 'node-b' },
  { namespace: 'shop', name: 'gone-1', uid: 'uid-gone', serviceAccount: 'gone', nodeName: 'node-a', failed: true },
];

const placements: PodPlacements = {
  placedPod: (ns, name) => PODS.find((p) => p.namespace === ns && p.name === name && !p.failed),
  serviceAccountOnNode: (node, ns, sa) =>
    PODS.some((p) => p.nodeName === node && p.namespace === ns && p.serviceAccount === sa && !p.failed),
};

/** What the API server answers for a token it signed (tokens of other keys or past their exp are not authenticated). */
const apiServerReview: TokenReviewer = async (token, audiences) => {
  try {
    const { payload } = await jwtVerify(token, clusterKey.publicKey, { issuer: ISSUER, audience: [...audiences] });
    const k8s = payload['kubernetes.io'] as { namespace: string; serviceaccount: { name: string }; pod?: { name: string; uid: string } };
    const node = (payload['kubernetes.io'] as { node?: { name: string } }).node;
    return {
      authenticated: true,
      username: `system:serviceaccount:${k8s.namespace}:${k8s.serviceaccount.name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${k8s.namespace}`, 'system:authenticated'],
      audiences: [...audiences],
      ...(k8s.pod
        ? {
            extra: {
              'authentication.kubernetes.io/pod-name': [k8s.pod.name],
              'authentication.kubernetes.io/pod-uid': [k8s.pod.uid],
              ...(node ? { 'authentication.kubernetes.io/node-name': [node.name] } : {}),
            },
          }
        : {}),
    };
  } catch (err) {
    // The API server's words for these two.
    const why = err instanceof joseErrors.JWTExpired ? 'service account token has expired' : 'invalid bearer token';
    return { authenticated: false, error: `[${why}]` };
  }
};

/** A service-account token as the API server issues one for a pod (TokenRequest bound to the pod). */
function podToken(
  pod: { namespace: string; name: string; uid?: string; serviceAccount: string; nodeName?: string },
  o: { key?: JoseKey; expSeconds?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    'kubernetes.io': {
      namespace: pod.namespace,
      serviceaccount: { name: pod.serviceAccount, uid: `sa-${pod.serviceAccount}` },
      pod: { name: pod.name, uid: pod.uid ?? `uid-${pod.name}` },
      ...(pod.nodeName ? { node: { name: pod.nodeName, uid: `uid-${pod.nodeName}` } } : {}),
    },
  })
    .setProtectedHeader({ alg: 'ES256', kid: 'cluster' })
    .setIssuer(ISSUER)
    .setAudience('istio-ca')
    .setSubject(`system:serviceaccount:${pod.namespace}:${pod.serviceAccount}`)
    .setIssuedAt(now - 120)
    .setExpirationTime(now + (o.expSeconds ?? 600))
    .sign(o.key ?? clusterKey.privateKey);
}

const ztunnelA = (): TestPod => PODS[0]!;

async function impersonate(token: string, identity: string): Promise<CsrCallResult> {
  const { csrPem } = await makeCsr();
  return callCreateCertificate({
    address: server.address,
    rootPem: server.ca.trustBundlePem(),
    csrPem,
    token,
    metadata: { ImpersonatedIdentity: identity },
  });
}

/** The refusal's reason, as logged (the caller only gets istiod's opaque message). */
function loggedReason(identity: string): string {
  const line = [...logs.lines].reverse().find((l) => l.includes('impersonation refused') && l.includes(identity));
  assert.ok(line, `no "impersonation refused" line for ${identity}:\n${logs.lines.slice(-5).join('\n')}`);
  return line;
}

before(async () => {
  dir = await tempDir();
  clusterKey = await generateKeyPair('ES256');
  otherKey = await generateKeyPair('ES256');
  server = await startSecureGrpc({
    ca: { trustDomain: 'cluster.local', caDir: path.join(dir.path, 'ca'), caCertsDir: path.join(dir.path, 'no-cacerts') },
    listen: { host: '127.0.0.1', port: 0 },
    namespace: 'istio-system',
    trustedNodeAccounts: [{ namespace: 'istio-system', serviceAccount: 'ztunnel' }],
    tokenReview: { review: apiServerReview },
    placement: nodePlacement(placements, 'cluster.local'),
    logger: logs.logger,
  });
});

after(async () => {
  server?.close();
  server?.server.server.forceShutdown();
  logs.assertNoPrivateKey();
  await dir?.remove();
});

describe('impersonation by a node proxy, checked against the pods of its node', () => {
  it('allows the trusted account an identity that runs on its own node', async () => {
    const r = await impersonate(await podToken(ztunnelA()), 'spiffe://cluster.local/ns/shop/sa/app');
    assert.ok(r.ok, r.ok ? '' : r.details);
    assert.deepEqual(sanUris(new x509.X509Certificate(r.certChain[0]!)), ['spiffe://cluster.local/ns/shop/sa/app']);
  });

  it("refuses an identity that runs only on another node (the caller's node is its pod's, not a claim)", async () => {
    const id = 'spiffe://cluster.local/ns/shop/sa/db';
    // The token claims node-b, but ztunnel-a's pod is on node-a: the pod decides, as istiod.
    expectCsrError(
      await impersonate(await podToken({ ...ztunnelA(), nodeName: 'node-b' }), id),
      grpc.status.UNAUTHENTICATED,
      /^request impersonation authentication failure$/,
    );
    assert.match(loggedReason(id), /no pod of service account shop\/db runs on node \\"node-a\\"/);
    // The ztunnel of node-b may.
    const r = await impersonate(await podToken(PODS[1]!), id);
    assert.ok(r.ok, r.ok ? '' : r.details);
  });

  it('refuses a caller that is not a trusted node account, even on the same node', async () => {
    const id = 'spiffe://cluster.local/ns/istio-system/sa/ztunnel';
    expectCsrError(
      await impersonate(await podToken(PODS[2]!), id),
      grpc.status.UNAUTHENTICATED,
      /^request impersonation authentication failure$/,
    );
    assert.match(loggedReason(id), /caller spiffe:\/\/cluster.local\/ns\/shop\/sa\/app is not a trusted node account/);
  });

  it('refuses a forged token (signed by another key) before looking at impersonation', async () => {
    expectCsrError(
      await impersonate(await podToken(ztunnelA(), { key: otherKey.privateKey }), 'spiffe://cluster.local/ns/shop/sa/app'),
      grpc.status.UNAUTHENTICATED,
      /^request authenticate failure: .*KubeJWTAuthenticator: the token review failed: \[invalid bearer token\]/,
    );
  });

  it('refuses an expired token', async () => {
    expectCsrError(
      await impersonate(await podToken(ztunnelA(), { expSeconds: -60 }), 'spiffe://cluster.local/ns/shop/sa/app'),
      grpc.status.UNAUTHENTICATED,
      /^request authenticate failure: .*KubeJWTAuthenticator: the token review failed: \[service account token has expired\]/,
    );
  });

  it('refuses a token of a re-created pod (UID), a pod that is gone, and an identity whose only pod Failed', async () => {
    const app = 'spiffe://cluster.local/ns/shop/sa/app';
    expectCsrError(await impersonate(await podToken({ ...ztunnelA(), uid: 'uid-old' }), app), grpc.status.UNAUTHENTICATED, /impersonation/);
    assert.match(loggedReason(app), /caller pod istio-system\/ztunnel-a found, but its UID uid-zt-a is not the token's uid-old/);
    expectCsrError(
      await impersonate(await podToken({ ...ztunnelA(), name: 'ztunnel-x' }), app),
      grpc.status.UNAUTHENTICATED,
      /impersonation/,
    );
    assert.match(loggedReason(app), /caller pod istio-system\/ztunnel-x not found/);
    const gone = 'spiffe://cluster.local/ns/shop/sa/gone';
    expectCsrError(await impersonate(await podToken(ztunnelA()), gone), grpc.status.UNAUTHENTICATED, /impersonation/);
    assert.match(loggedReason(gone), /no pod of service account shop\/gone runs on node/);
  });
});

describe('nodePlacement', () => {
  const check = nodePlacement(placements, 'cluster.local');
  const caller = (pod?: Caller['pod'], sa = 'ztunnel'): Caller => ({
    source: 'KubernetesToken',
    identities: [`spiffe://cluster.local/ns/istio-system/sa/${sa}`],
    ...(pod ? { pod } : {}),
  });

  it('needs a pod-bound token, and the pod must run as the caller', async () => {
    assert.match(
      (await check(caller(), 'spiffe://cluster.local/ns/shop/sa/app'))!,
      /did not authenticate with a pod-bound Kubernetes token/,
    );
    assert.match(
      (await check(caller({ name: 'ztunnel-a', uid: 'uid-zt-a' }, 'other'), 'spiffe://cluster.local/ns/shop/sa/app'))!,
      /runs as service account ztunnel, not other/,
    );
    assert.equal(await check(caller({ name: 'ztunnel-a', uid: 'uid-zt-a' }), 'spiffe://cluster.local/ns/shop/sa/app'), undefined);
  });
});
