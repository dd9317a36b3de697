/**
 * An ingress gateway on the real Envoy, run by `meshpilot agent --proxyType router` against
 * `meshpilot discovery` from a config directory: TLS terminated with the certificate of a
 * `credentialName` Secret (served by meshpilot over SDS on the ADS stream), routing by host and
 * header to subsets of a mesh service, weights over 1000 requests, a VirtualService edit measured
 * from the file write until the traffic follows, and an Envoy NACK reported per proxy while the
 * rest of the config keeps flowing. Envoy's rejected-update counters stay 0 except where a test
 * plants a resource Envoy refuses.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { envoySkipReason } from '../support/envoy.js';
import {
  envoyAdmin,
  httpGet,
  rejectedUpdates,
  startEnvoyAgent,
  stopEnvoyAgent,
  waitAgentReady,
  type EnvoyAgent,
} from '../support/envoy-agent.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { freePorts } from '../support/ports.js';
import { createTestCa, issueServerCert } from '../support/spiffe-certs.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const skip = envoySkipReason();
const GW_NS = 'istio-system';
const NS = 'shop';
const HOST = 'shop.example.com';
const WEB = `web.${NS}.svc.cluster.local`;

let dir: TempDir;
let configDir: string;
let ca: JwtCaMeshpilot;
let gw: EnvoyAgent;
let caPem: string;
let httpsPort: number;
let httpPort: number;
const backends: http.Server[] = [];

/** A backend that answers with its version and the request's path and host. */
async function backend(version: string): Promise<number> {
  const s = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ version, path: req.url, host: req.headers.host }));
  });
  backends.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return (s.address() as AddressInfo).port;
}

interface Reply {
  readonly status: number;
  readonly version?: string;
  readonly path?: string;
  readonly peerCertSubjectAlt?: string;
}

const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 4 });

/** One HTTPS request through the gateway, SNI and Host `host`, trusting the test CA. */
function httpsGet(
  p: string,
  opts: { host?: string; headers?: http.OutgoingHttpHeaders; agent?: https.Agent | false } = {},
): Promise<Reply> {
  const host = opts.host ?? HOST;
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port: httpsPort,
        path: p,
        servername: host,
        ca: caPem,
        headers: { host, ...opts.headers },
        agent: opts.agent ?? keepAlive,
      },
      (res) => {
        const cert = (res.socket as TLSSocket).getPeerCertificate();
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          const j = res.statusCode === 200 ? (JSON.parse(body) as { version: string; path: string }) : undefined;
          resolve({
            status: res.statusCode ?? 0,
            ...(j ? { version: j.version, path: j.path } : {}),
            ...(cert.subjectaltname ? { peerCertSubjectAlt: cert.subjectaltname } : {}),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function tally(n: number, p = '/', headers: http.OutgoingHttpHeaders = {}): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const r = await httpsGet(p, { headers });
    const key = r.version ?? `status ${r.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

const routes = (http: unknown[]): unknown => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'shop', namespace: NS },
  spec: { hosts: [HOST], gateways: [`${GW_NS}/ingress`], http },
});
const to = (subset: string, weight?: number): Record<string, unknown> => ({
  destination: { host: WEB, subset, port: { number: 8080 } },
  ...(weight !== undefined ? { weight } : {}),
});
const SPLIT_80_20 = routes([
  { match: [{ headers: { 'x-version': { exact: 'v2' } } }], route: [to('v2')] },
  { match: [{ uri: { prefix: '/old/' } }], rewrite: { uri: '/new/' }, route: [to('v1')] },
  { route: [to('v1', 80), to('v2', 20)] },
]);

interface SyncType {
  readonly status: string;
  readonly lastNack?: { readonly message: string };
}
async function gatewaySync(): Promise<Record<string, SyncType>> {
  const res = await fetch(`http://${ca.mp.httpAddr}/debug/syncz`);
  const entries = (await res.json()) as { proxy: string; types: Record<string, SyncType> }[];
  const e = entries.find((x) => x.proxy.startsWith('router~') && x.proxy.includes('ingressgateway'));
  return e?.types ?? {};
}

describe('ingress gateway on the real Envoy (meshpilot agent, credentialName TLS, routing)', { skip }, () => {
  before(async () => {
    dir = tempDir('meshpilot-envoy-ingress-');
    configDir = path.join(dir.path, 'config');
    const testCa = await createTestCa(dir.path, 'ingress-ca');
    caPem = await readFile(testCa.certFile, 'utf8');
    const cred = await issueServerCert(testCa, dir.path, 'shop', [HOST]);
    [httpsPort, httpPort] = (await freePorts(2)) as [number, number];
    const [v1, v2] = [await backend('v1'), await backend('v2')];
    await writeYaml(configDir, 'mesh.yaml', [
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: 'web', namespace: NS },
        spec: {
          hosts: [WEB],
          location: 'MESH_INTERNAL',
          resolution: 'STATIC',
          ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }],
          workloadSelector: { labels: { app: 'web' } },
        },
      },
      ...[
        ['v1', v1],
        ['v2', v2],
      ].map(([v, port]) => ({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: `web-${v}`, namespace: NS },
        spec: { address: '127.0.0.1', ports: { http: port }, labels: { app: 'web', version: v } },
      })),
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'web', namespace: NS },
        spec: {
          host: WEB,
          subsets: [
            { name: 'v1', labels: { version: 'v1' } },
            { name: 'v2', labels: { version: 'v2' } },
          ],
        },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'Gateway',
        metadata: { name: 'ingress', namespace: GW_NS },
        spec: {
          selector: { istio: 'ingressgateway' },
          servers: [
            {
              port: { number: httpsPort, name: 'https', protocol: 'HTTPS' },
              hosts: [`${NS}/${HOST}`],
              tls: { mode: 'SIMPLE', credentialName: 'shop-cert' },
            },
            { port: { number: httpPort, name: 'http', protocol: 'HTTP' }, hosts: [`${NS}/${HOST}`] },
          ],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'shop-cert', namespace: GW_NS },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': cred.certPem, 'tls.key': cred.keyPem },
      },
    ]);
    await writeYaml(configDir, 'routes.yaml', [SPLIT_80_20]);
    ca = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'));
    gw = await startEnvoyAgent(ca, {
      name: 'istio-ingressgateway',
      namespace: GW_NS,
      labels: 'istio=ingressgateway,app=istio-ingressgateway',
      dir: dir.path,
    });
    await waitAgentReady(gw);
    await waitFor(async () => (await httpsGet('/', { agent: false }).catch(() => ({ status: 0 }))).status === 200, {
      description: 'HTTPS through the gateway',
      timeoutMs: 30_000,
    }).catch((e: Error) => assert.fail(e.message + gw.tail()));
  });

  after(async () => {
    keepAlive.destroy();
    if (gw) await stopEnvoyAgent(gw);
    await ca?.mp.stop();
    await Promise.all(backends.map((b) => new Promise((r) => b.close(r))));
    await dir?.remove();
  });

  it('terminates TLS with the credentialName certificate (SDS from meshpilot) and routes to the mesh service', async () => {
    const r = await httpsGet('/', { agent: false });
    assert.equal(r.status, 200);
    assert.ok(r.version === 'v1' || r.version === 'v2', JSON.stringify(r));
    assert.equal(r.peerCertSubjectAlt, `DNS:${HOST}`, 'the Secret’s certificate');
    const secrets = JSON.parse(await envoyAdmin(gw, '/config_dump?resource=dynamic_active_secrets')) as { configs: { name: string }[] };
    assert.ok(
      secrets.configs.some((s) => s.name === 'kubernetes://shop-cert'),
      JSON.stringify(secrets.configs.map((s) => s.name)),
    );
    await assert.rejects(
      new Promise((resolve, reject) =>
        https
          .get({ host: '127.0.0.1', port: httpsPort, servername: HOST, agent: false, headers: { host: HOST } }, resolve)
          .on('error', reject),
      ),
      /self[- ]signed|unable to verify|certificate/i,
      'a client that does not trust the issuer refuses the handshake',
    );
  });

  it('routes by host: another Host on the HTTP server gets 404 from Envoy', async () => {
    assert.equal((await httpGet(httpPort, '/', { headers: { host: HOST } })).status, 200);
    const other = await httpGet(httpPort, '/', { headers: { host: 'other.example.com' } });
    assert.deepEqual([other.status, other.headers.server], [404, 'istio-envoy'], 'answered by Envoy (HCM server_name as istiod sets it)');
  });

  it('splits 80/20 over 1000 requests (±5 %), a header match goes to v2 only, a prefix is rewritten', async (t) => {
    const counts = await tally(1000);
    const v2 = (counts.get('v2') ?? 0) / 1000;
    assert.equal((counts.get('v1') ?? 0) + (counts.get('v2') ?? 0), 1000, JSON.stringify([...counts]));
    assert.ok(Math.abs(v2 - 0.2) <= 0.05, `v2 share ${v2}`);
    assert.deepEqual([...(await tally(50, '/', { 'x-version': 'v2' }))], [['v2', 50]]);
    const rewritten = await httpsGet('/old/page?q=1');
    assert.deepEqual([rewritten.version, rewritten.path], ['v1', '/new/page?q=1']);
    t.diagnostic(`1000 requests: v1 ${counts.get('v1')}, v2 ${counts.get('v2')}`);
  });

  it('a VirtualService edit converges: file write → every request goes to v2', async (t) => {
    const t0 = Date.now();
    await writeYaml(configDir, 'routes.yaml', [routes([{ route: [to('v2')] }])]);
    // Converged once 20 requests in a row reach v2 (at 20 % before, 20 in a row by chance is ~1e-14).
    let streak = 0;
    await waitFor(
      async () => {
        streak = (await httpsGet('/')).version === 'v2' ? streak + 1 : 0;
        return streak >= 20;
      },
      { description: 'all traffic on v2', timeoutMs: 15_000, intervalMs: 0 },
    );
    const convergedMs = Date.now() - t0;
    assert.deepEqual([...(await tally(200))], [['v2', 200]]);
    assert.equal(await rejectedUpdates(gw), 0, 'nothing rejected so far');
    t.diagnostic(`file write → traffic on v2: ${convergedMs} ms (includes the 20-request streak)`);
  });

  it('an Envoy NACK is reported for that proxy (syncz, metric) while the rest keeps flowing, and clears when fixed', async () => {
    // Valid to every rule meshpilot knows, refused by Envoy: an EDS cluster cannot use CLUSTER_PROVIDED.
    await writeYaml(configDir, 'bad-filter.yaml', [
      {
        apiVersion: 'networking.istio.io/v1alpha3',
        kind: 'EnvoyFilter',
        metadata: { name: 'bad-lb', namespace: GW_NS },
        spec: {
          workloadSelector: { labels: { istio: 'ingressgateway' } },
          configPatches: [
            {
              applyTo: 'CLUSTER',
              match: { context: 'GATEWAY', cluster: { service: WEB, subset: 'v1' } },
              patch: { operation: 'MERGE', value: { lb_policy: 'CLUSTER_PROVIDED' } },
            },
          ],
        },
      },
    ]);
    const nack = await waitFor(async () => (await gatewaySync())['CDS']?.lastNack, {
      description: 'a CDS NACK in /debug/syncz',
      timeoutMs: 15_000,
    }).catch((e: Error) => assert.fail(e.message + gw.tail()));
    assert.match(
      nack.message,
      /cluster provided LB specified but cluster 'outbound\|8080\|v1\|web\.shop\.svc\.cluster\.local' did not provide one/,
      'Envoy’s own reason',
    );
    assert.ok((await rejectedUpdates(gw)) > 0, 'Envoy counted the rejection');
    const metrics = await (await fetch(`http://${ca.mp.monitoringAddr}/metrics`)).text();
    assert.match(metrics, /pilot_total_xds_rejects\{type="cds"\} [1-9]/);
    // Envoy keeps its last good clusters, and a route change still reaches it.
    await writeYaml(configDir, 'routes.yaml', [routes([{ route: [to('v1')] }])]);
    await waitFor(async () => (await httpsGet('/')).version === 'v1', {
      description: 'the route change despite the CDS NACK',
      timeoutMs: 15_000,
      intervalMs: 20,
    });
    await removeFile(configDir, 'bad-filter.yaml');
    await waitFor(async () => (await gatewaySync())['CDS']?.status === 'SYNCED', { description: 'CDS accepted again', timeoutMs: 15_000 });
    assert.deepEqual([...(await tally(20))], [['v1', 20]]);
  });
});
