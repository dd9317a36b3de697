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

const findWorkload = (d: ZtunnelConfigDump, p: Peer): Record<string, unknown> | undefined => d.workloads?.find((w) => w.uid === uid(p));

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
    for (const p of [A, B])
      await zt(p)
        .waitReady()
        .catch((e: Error) => assert.fail(withLogs(e.message)));
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
      // Both see the same mesh: the two workloads, the service with B as its only endpoint, no policy yet.
      const dump = await zt(p).configDump();
      assert.deepEqual(
        [...(dump.workloads ?? [])].sort((x, y) => String(x.uid).localeCompare(String(y.uid))),
        [expectedWorkload(A), expectedWorkload(B, [`${NS}/${SERVICE_HOST}`])],
        `${p.name}'s workloads`,
      );
      assert.deepEqual(dump.services, [expectedService], `${p.name}'s services`);
      assert.deepEqual(dump.policies, [], `${p.name}'s policies`);
    }
  });

  it("A's request to the VIP reaches B's app over HBONE, and B's ztunnel sees A's identity", async () => {
    const before = inboundFromA(await stats(B));
    const r = await requestFromA().catch((e: Error) => assert.fail(withLogs(e.message)));
    assert.equal(r.status, 200);
    const echo = JSON.parse(r.body) as { name: string; path: string; port: number };
    assert.deepEqual({ name: echo.name, path: echo.path, port: echo.port }, { name: B.name, path: `/from-${A.name}`, port: APP_PORT });

    // B's ztunnel, reporting as destination: one more connection opened from A's principal to B.
    await waitFor(async () => inboundFromA(await stats(B)) === before + 1, {
      timeoutMs: 10_000,
      description: `istio_tcp_connections_opened_total{reporter="destination",source_principal="${identity(A)}"} of B to grow by one`,
    }).catch((e: Error) => assert.fail(withLogs(e.message)));
    // And its access log: the inbound connection, from A's address and identity, over B's HBONE port to its app.
    const line = await zt(B).waitForLog(/connection complete.*direction="inbound"/);
    for (const field of [
      `src.addr=${A.ip}:`,
      `src.identity="${identity(A)}"`,
      `dst.addr=${B.ip}:15008 `,
      `dst.hbone_addr=${B.ip}:${APP_PORT} `,
      `dst.service="${SERVICE_HOST}"`,
      `dst.identity="${identity(B)}"`,
    ])
      assert.ok(line.includes(field), `B's access log has ${field}: ${line}`);
    // A's ztunnel carried it outbound over HBONE to B's address.
    const out = await zt(A).waitForLog(/connection complete.*direction="outbound"/);
    for (const field of [`dst.addr=${B.ip}:15008 `, `dst.hbone_addr=${B.ip}:${APP_PORT} `, `dst.identity="${identity(B)}"`])
      assert.ok(out.includes(field), `A's access log has ${field}: ${out}`);
  });

  it('an L4 DENY from A is enforced and lifted; a new workload reaches both ztunnels (timed from the file write)', async (t: TestContext) => {
    assert.ok(await flows(), withLogs('traffic flows before the policy'));
    const figures: Record<string, number> = {};

    // DENY written: until A's requests are refused.
    let start = Date.now();
    await writeYaml(configDir, DENY_FILE, [denyClient]);
    figures.denyEnforcedMs = await msUntil(start, async () => !(await flows()), "A's request to be refused");
    const refused = await requestFromA().then(
      (r) => `HTTP ${r.status}`,
      (e: Error) => e.message,
    );
    assert.doesNotMatch(refused, /^HTTP 200/, 'A stays refused');
    for (const p of [A, B]) {
      const dump = await zt(p).configDump();
      assert.deepEqual(dump.policies, [expectedPolicy], `${p.name}'s policies`);
      assert.deepEqual(
        findWorkload(dump, B)?.authorizationPolicies,
        [`${NS}/${denyClient.metadata.name}`],
        `B's policies in ${p.name}'s dump`,
      );
    }
    // B's ztunnel refused it, naming A's identity and the policy.
    const rejection = await zt(B).waitForLog(/direction="inbound".*policy rejection/);
    for (const field of [`src.identity="${identity(A)}"`, `explicitly denied by: ${NS}/${denyClient.metadata.name}`])
      assert.ok(rejection.includes(field), `B's rejection has ${field}: ${rejection}`);
    t.diagnostic(`A's request under the DENY: ${refused}; B's ztunnel: ${rejection.replace(/^.*?\t(warn|info|error)\taccess\t/, '')}`);

    // DENY removed: until A's requests flow again.
    start = Date.now();
    await removeFile(configDir, DENY_FILE);
    figures.denyLiftedMs = await msUntil(start, flows, "A's request to flow again");
    for (const p of [A, B]) {
      const dump = await zt(p).configDump();
      assert.deepEqual(dump.policies, [], `${p.name}'s policies after the removal`);
      assert.deepEqual(findWorkload(dump, B), expectedWorkload(B, [`${NS}/${SERVICE_HOST}`]), `B in ${p.name}'s dump after the removal`);
    }

    // A new WorkloadEntry: until both ztunnels hold it.
    start = Date.now();
    await writeYaml(configDir, 'extra.yaml', [workloadEntry(C)]);
    const inBoth = async (): Promise<boolean> => {
      const dumps = await Promise.all([A, B].map((p) => zt(p).configDump()));
      return dumps.every((d) => findWorkload(d, C) !== undefined);
    };
    figures.newWorkloadMs = await msUntil(start, inBoth, `workload ${C.name} in both ztunnels' config_dump`);
    for (const p of [A, B])
      assert.deepEqual(findWorkload(await zt(p).configDump(), C), expectedWorkload(C), `${C.name} in ${p.name}'s dump`);

    t.diagnostic(
      `convergence from the file write (two dedicated ztunnels, one meshpilot, file mode): ` +
        `DENY enforced ${figures.denyEnforcedMs} ms, DENY lifted ${figures.denyLiftedMs} ms, new workload in both ${figures.newWorkloadMs} ms`,
    );
  });
});

/** A WorkloadEntry as ztunnel's config_dump shows it (what meshpilot sent, in ztunnel's own form). */
function expectedWorkload(p: Peer, services: readonly string[] = []): Record<string, unknown> {
  return {
    canonicalName: p.name,
    canonicalRevision: 'latest',
    capacity: 1,
    clusterId: 'Kubernetes',
    name: p.name,
    namespace: NS,
    networkMode: 'Standard',
    protocol: 'HBONE',
    serviceAccount: p.serviceAccount,
    ...(services.length > 0 ? { services } : {}),
    status: 'Healthy',
    trustDomain: 'cluster.local',
    uid: uid(p),
    workloadIps: [p.ip],
    workloadName: p.name,
    workloadType: 'pod',
  };
}

const expectedService = {
  canonical: true,
  endpoints: { [uid(B)]: { port: { '80': APP_PORT }, status: 'Healthy', workloadUid: uid(B) } },
  hostname: SERVICE_HOST,
  name: 'server',
  namespace: NS,
  ports: { '80': APP_PORT },
  subjectAltNames: [],
  vips: [`/${VIP}`],
  visibility: 'Public',
};

/** The DENY policy as ztunnel holds it (its own form of the istio.security.Authorization meshpilot sent). */
const expectedPolicy = {
  action: 'Deny',
  dryRun: false,
  name: denyClient.metadata.name,
  namespace: NS,
  rules: [[[{ principals: [{ Exact: `cluster.local/ns/${NS}/sa/${A.serviceAccount}` }] }]]],
  scope: 'WorkloadSelector',
};

async function stats(p: Peer): Promise<string> {
  const res = await fetch(`http://${zt(p).ports.stats}/metrics`);
  assert.equal(res.status, 200, `${p.name}'s /metrics`);
  return res.text();
}

/**
 * B's count of inbound connections from A's identity (reporter destination), 0 before the first.
 * ztunnel's /metrics is OpenMetrics from prometheus-client, whose family names (`…_seconds_total`
 * declared as `…_seconds`) the strict parser of test/support/prom-text.ts refuses: the counter's
 * sample lines are read alone.
 */
function inboundFromA(text: string): number {
  let n = 0;
  for (const m of text.matchAll(/^istio_tcp_connections_opened_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.reporter === 'destination' && labels.source_principal === identity(A)) n += Number(m[2]);
  }
  return n;
}
