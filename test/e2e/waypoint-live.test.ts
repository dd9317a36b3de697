/**
 * A waypoint on the real Envoy 1.40, run by `meshpilot agent --proxyType waypoint` against
 * `meshpilot discovery`: the config is accepted (no update rejected, connect_terminate,
 * main_internal and connect_originate active in /config_dump), and L7 traffic goes through it on
 * loopback as ztunnel would send it — HTTP/2 CONNECT over mTLS to 15008 with the service VIP as the
 * tunnel's authority, a workload certificate of the mesh CA as the client's identity — to a
 * backend reached directly (a WorkloadEntry outside ambient). The AuthorizationPolicy that targets
 * the waypoint allows GET from one service account only, so identity and method both decide.
 */
import assert from 'node:assert/strict';
import { copyFile, readFile } from 'node:fs/promises';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envoySkipReason } from '../support/envoy.js';
import { envoyAdmin, rejectedUpdates, startEnvoyAgent, stopEnvoyAgent, waitAgentReady, type EnvoyAgent } from '../support/envoy-agent.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { createTestCa, issueSpiffeCert, spiffeId, type WorkloadCerts } from '../support/spiffe-certs.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { writeYaml } from '../support/yaml-files.js';

const NS = 'apps';
const VIP = '240.240.0.10';
const HBONE_PORT = 15008;

/** The HBONE port is fixed (istiod binds 0.0.0.0:15008): skip when something else holds it. */
async function hbonePortFree(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(HBONE_PORT, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

const skip = envoySkipReason() ?? ((await hbonePortFree()) ? undefined : `port ${HBONE_PORT} is in use`);

let dir: TempDir;
let ca: JwtCaMeshpilot;
let waypoint: EnvoyAgent;
let backend: http.Server;
let ratings: WorkloadCerts;
let stranger: WorkloadCerts;
let rootPem: string;

/** One request through the waypoint as ztunnel sends it: CONNECT to the VIP, then HTTP/1.1 inside the tunnel. */
async function throughWaypoint(
  client: WorkloadCerts,
  method: string,
  p: string,
): Promise<{ connect: number; status: number; body: string }> {
  const session = http2.connect(`https://127.0.0.1:${HBONE_PORT}`, {
    ca: rootPem,
    cert: await readFile(client.certChainFile, 'utf8'),
    key: await readFile(client.keyFile, 'utf8'),
    ALPNProtocols: ['h2'],
    // The waypoint presents its workload (SPIFFE) certificate: no DNS name to check.
    checkServerIdentity: () => undefined,
  });
  try {
    const stream = session.request({ ':method': 'CONNECT', ':authority': `${VIP}:9080` }, { endStream: false });
    const connect = await new Promise<number>((resolve, reject) => {
      stream.once('response', (h) => resolve(Number(h[':status'])));
      stream.once('error', reject);
    });
    if (connect !== 200) return { connect, status: 0, body: '' };
    // Keep-alive inside the tunnel: the response is read to its Content-Length, then the stream closed
    // (a connection closed by the backend resets the CONNECT stream, as a TCP reset would).
    stream.write(`${method} ${p} HTTP/1.1\r\nHost: reviews.${NS}.svc.cluster.local\r\n\r\n`);
    const raw = await new Promise<string>((resolve, reject) => {
      let data = '';
      stream.setEncoding('utf8');
      stream.on('data', (d: string) => {
        data += d;
        const head = data.indexOf('\r\n\r\n');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(data.slice(0, head))?.[1] ?? -1);
        if (head >= 0 && length >= 0 && Buffer.byteLength(data.slice(head + 4)) >= length) resolve(data);
      });
      stream.once('end', () => resolve(data));
      stream.once('error', reject);
    });
    stream.close();
    const status = Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1] ?? 0);
    return { connect, status, body: raw.slice(raw.indexOf('\r\n\r\n') + 4) };
  } finally {
    session.close();
  }
}

describe('waypoint on the real Envoy (meshpilot agent --proxyType waypoint)', { skip }, () => {
  before(async () => {
    dir = tempDir('meshpilot-waypoint-');
    const caDir = path.join(dir.path, 'ca');
    // The mesh CA is a plug-in root of the test's own, so the test can issue client identities from it.
    const root = await createTestCa(dir.path, 'mesh-root');
    await writeYaml(caDir, '.keep.yaml', []);
    await copyFile(root.certFile, path.join(caDir, 'ca-cert.pem'));
    await copyFile(root.keyFile, path.join(caDir, 'ca-key.pem'));
    await copyFile(root.certFile, path.join(caDir, 'root-cert.pem'));
    rootPem = await readFile(root.certFile, 'utf8');
    ratings = await issueSpiffeCert(root, dir.path, 'ratings', spiffeId(NS, 'ratings'));
    stranger = await issueSpiffeCert(root, dir.path, 'stranger', spiffeId(NS, 'stranger'));
    backend = http.createServer((req, res) => res.end(JSON.stringify({ version: 'v1', method: req.method, path: req.url })));
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
    const backendPort = (backend.address() as net.AddressInfo).port;
    const configDir = path.join(dir.path, 'config');
    await writeYaml(configDir, 'waypoint.yaml', [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: 'waypoint', namespace: NS },
        spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: HBONE_PORT, protocol: 'HBONE' }] },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: 'reviews', namespace: NS, labels: { 'istio.io/use-waypoint': 'waypoint' } },
        spec: {
          hosts: [`reviews.${NS}.svc.cluster.local`],
          addresses: [VIP],
          location: 'MESH_INTERNAL',
          resolution: 'STATIC',
          ports: [{ number: 9080, name: 'http', protocol: 'HTTP' }],
          workloadSelector: { labels: { app: 'reviews' } },
        },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: 'reviews-v1', namespace: NS },
        spec: { address: '127.0.0.1', ports: { http: backendPort }, labels: { app: 'reviews', version: 'v1' } },
      },
      {
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: { name: 'reviews-read', namespace: NS },
        spec: {
          targetRefs: [{ kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'waypoint' }],
          action: 'ALLOW',
          rules: [{ from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/ratings`] } }], to: [{ operation: { methods: ['GET'] } }] }],
        },
      },
    ]);
    ca = await startJwtCaMeshpilot(configDir, caDir, { args: ['--caCertsDir', caDir] });
    waypoint = await startEnvoyAgent(ca, {
      name: 'waypoint',
      namespace: NS,
      labels: 'gateway.networking.k8s.io/gateway-name=waypoint',
      proxyType: 'waypoint',
      dir: dir.path,
    });
    await waitAgentReady(waypoint);
  });

  after(async () => {
    if (waypoint) await stopEnvoyAgent(waypoint);
    await ca?.mp.stop();
    await new Promise<void>((r) => (backend ? backend.close(() => r()) : r()));
    await dir?.remove();
  });

  it('accepts the config: the three listeners active, nothing rejected', async () => {
    await waitFor(
      async () => {
        const dump = JSON.parse(await envoyAdmin(waypoint, '/config_dump?resource=dynamic_listeners')) as {
          configs: { name?: string; active_state?: unknown }[];
        };
        const active = dump.configs.filter((c) => c.active_state !== undefined).map((c) => c.name);
        return ['connect_terminate', 'main_internal', 'connect_originate'].every((n) => active.includes(n));
      },
      { description: 'the waypoint listeners active', timeoutMs: 30_000 },
    ).catch((e: Error) => assert.fail(e.message + waypoint.tail()));
    assert.equal(await rejectedUpdates(waypoint), 0, waypoint.tail());
    const clusters = await envoyAdmin(waypoint, '/clusters');
    assert.match(clusters, /inbound-vip\|9080\|http\|reviews\.apps\.svc\.cluster\.local/);
  });

  it('carries a GET from the allowed identity through HBONE to the backend', async () => {
    const r = await throughWaypoint(ratings, 'GET', '/reviews/1');
    assert.equal(r.connect, 200, 'the tunnel is accepted');
    assert.equal(r.status, 200, r.body);
    assert.deepEqual(JSON.parse(r.body), { version: 'v1', method: 'GET', path: '/reviews/1' });
  });

  it('denies another method, and another identity, by the policy targeting the waypoint', async () => {
    assert.equal((await throughWaypoint(ratings, 'DELETE', '/reviews/1')).status, 403);
    assert.equal((await throughWaypoint(stranger, 'GET', '/reviews/1')).status, 403);
  });
});
