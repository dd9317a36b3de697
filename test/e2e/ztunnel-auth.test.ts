/**
 * The real ztunnel (test/support/ztunnel.ts) against a meshpilot process, authenticating as it does
 * with istiod: TLS without a client certificate, a bearer JWT (here checked with JWT_RULE against a
 * file JWKS) on its Delta ADS stream and on its CSRs.
 *
 * - With a valid token for shop/app, its xDS stream is accepted (meshpilot lists the ztunnel node
 *   among its connections) and it gets its workload certificate from meshpilot's CA: the first
 *   HBONE connection makes ztunnel fetch it, and config_dump shows it for
 *   spiffe://cluster.local/ns/shop/sa/app, issued under meshpilot's root.
 * - At the same time, a ztunnel with a token signed by another key is refused; its log names
 *   meshpilot's error (UNAUTHENTICATED, the signature).
 * - A valid token of another namespace than the node's: PERMISSION_DENIED, as istiod.
 *
 * Which workloads ztunnel knows comes from meshpilot's Address generator; here the own workload is
 * also given in LOCAL_XDS, so the certificate does not depend on what that generator sends.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey } from 'jose';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePort } from '../support/ports.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { dumpedPem, localWorkload, startZtunnel, ztunnelSkipReason, type Ztunnel, type ZtunnelWorkload } from '../support/ztunnel.js';

const skip = ztunnelSkipReason();

const ISSUER = 'https://issuer.ztunnel.test';
const APP: ZtunnelWorkload = { namespace: 'shop', pod: 'app-0', serviceAccount: 'app', ip: '10.44.0.10' };
const APP_ID = 'spiffe://cluster.local/ns/shop/sa/app';

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let key: { privateKey: JoseKey; publicKey: JoseKey };
let secureAddr = '';
let rootPem = '';
const ztunnels: Ztunnel[] = [];

const withLogs = (msg: string, zt?: Ztunnel): string =>
  `${msg}\n--- meshpilot ---\n${mp?.tail(20) ?? ''}${zt ? `\n--- ztunnel ---\n${zt.tail(20)}` : ''}`;

function token(sub: string, signWith: JoseKey = key.privateKey): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'zt' })
    .setIssuer(ISSUER)
    .setAudience('istio-ca')
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(signWith);
}

async function ztunnel(workload: ZtunnelWorkload, bearer: string, localConfig?: Record<string, unknown>): Promise<Ztunnel> {
  const zt = await startZtunnel({ secureAddress: secureAddr, rootPem, token: bearer, workload, ...(localConfig ? { localConfig } : {}) });
  ztunnels.push(zt);
  return zt;
}

/** The proxy ids meshpilot has streams for (/debug/syncz). */
async function connectedProxies(): Promise<string[]> {
  const res = await fetch(`http://${mp!.httpAddr}/debug/syncz`);
  return ((await res.json()) as { proxy: string }[]).map((e) => e.proxy);
}

describe('the real ztunnel authenticates to meshpilot (bearer JWT over server-only TLS)', { skip }, () => {
  before(async () => {
    dir = tempDir('meshpilot-ztunnel-auth-');
    key = await generateKeyPair('ES256');
    const jwks = path.join(dir.path, 'jwks.json');
    await writeFile(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'zt', alg: 'ES256' }] }));
    secureAddr = `127.0.0.1:${await freePort()}`;
    const configDir = path.join(dir.path, 'config');
    await mkdir(configDir);
    mp = await startMeshpilot({
      configDir,
      args: ['--secureGRPCAddr', secureAddr, '--caDir', path.join(dir.path, 'ca')],
      env: {
        JWT_RULE: JSON.stringify({ issuer: ISSUER, audiences: ['istio-ca'], jwks_uri: `file://${jwks}` }),
        ROOT_CA_DIR: path.join(dir.path, 'no-cacerts'),
        PILOT_ENABLE_AMBIENT: 'true',
      },
    });
    rootPem = await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8');
  });

  after(async () => {
    await Promise.all(ztunnels.map((z) => z.stop()));
    await mp?.stop();
    await dir?.remove();
  });

  it('a valid token: the xDS stream is accepted, and the workload certificate comes from meshpilot', async () => {
    const good = await ztunnel(APP, await token('system:serviceaccount:shop:app'), { workloads: [localWorkload(APP)] });
    // A second ztunnel, side by side, with a token of a key meshpilot does not trust.
    const forged = await ztunnel(
      { namespace: 'shop', pod: 'app-1', serviceAccount: 'app', ip: '10.44.0.11' },
      await token('system:serviceaccount:shop:app', (await generateKeyPair('ES256')).privateKey),
    );

    await waitFor(async () => (await connectedProxies()).includes(good.nodeId), {
      timeoutMs: 20_000,
      description: `meshpilot to hold a stream of ${good.nodeId}`,
    }).catch((e: Error) => assert.fail(withLogs(e.message, good)));

    // In dedicated mode ztunnel fetches its certificate when it first needs it (after its first xDS sync).
    const cert = await good.waitForCertificate(APP_ID).catch((e: Error) => assert.fail(withLogs(e.message)));
    const leaf = new X509Certificate(dumpedPem(cert.certChain[0]!));
    assert.match(leaf.subjectAltName ?? '', new RegExp(`URI:${APP_ID}`));
    assert.ok(leaf.verify(new X509Certificate(rootPem).publicKey), "the leaf is signed by meshpilot's root");
    const fingerprint = (pem: string): string => new X509Certificate(pem).fingerprint256;
    assert.deepEqual(
      cert.rootCerts.map((r) => fingerprint(dumpedPem(r))),
      [fingerprint(rootPem)],
      "ztunnel's root is meshpilot's",
    );
    await mp!.waitForLog((l) => l.json?.msg === 'CSR signed' && JSON.stringify(l.json.sans) === JSON.stringify([APP_ID]), {
      description: 'meshpilot signing the CSR of ztunnel',
    });

    // The forged token: refused with meshpilot's reason, which ztunnel logs.
    const refusal = await forged.waitForLog(/Unauthenticated/, 20_000);
    assert.match(refusal, /authentication failure: .*IDTokenAuthenticator: failed to verify the JWT: the token signature is invalid/);
    assert.ok(!(await connectedProxies()).includes(forged.nodeId), 'meshpilot holds no stream of the refused ztunnel');
  });

  it("a valid token of another namespace than the node's: PERMISSION_DENIED", async () => {
    const other = await ztunnel(
      { namespace: 'billing', pod: 'pay-0', serviceAccount: 'pay', ip: '10.44.0.12' },
      await token('system:serviceaccount:shop:app'),
    );
    const refusal = await other.waitForLog(/PermissionDenied/, 20_000);
    assert.match(refusal, /authorization failed: no identities \(spiffe:\/\/cluster.local\/ns\/shop\/sa\/app\) matched billing\//);
  });
});
