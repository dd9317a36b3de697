/**
 * Every debug endpoint fetched on --httpAddr and --monitoringAddr with its
 * JSON shape asserted, the xDS debug types over ADS, and propagation tracking of config changes
 * (converged, NACKed) in /debug/push_status and the log.
 */
import assert from 'node:assert/strict';
import { fromBinary } from '@bufbuild/protobuf';
import { after, before, describe, it } from 'node:test';
import { ClientConfigSchema, ConfigStatus } from '../../src/gen/envoy/service/status/v3/csds_pb.js';
import { freePorts } from '../support/ports.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode, type AdsNode } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { clusterEdsName, decodeResources, listenerRouteName, routeClusters, TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { packageVersion } from '../../src/util/version.js';

const HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;
const ADMIN = 'type.googleapis.com/envoy.admin.v3.';

type Json = Record<string, unknown>;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let port = 0;
const streams: AdsStream[] = [];

function open(node: AdsNode): AdsStream {
  assert.ok(mp);
  const s = AdsStream.open(mp.grpcAddr, { node });
  streams.push(s);
  return s;
}

async function get(path: string, addr = mp?.httpAddr): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(`http://${addr}${path}`);
  const text = await res.text();
  let body: unknown = undefined;
  if ((res.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
  return { status: res.status, body, text };
}

async function getJson(path: string, addr?: string): Promise<unknown> {
  const r = await get(path, addr);
  assert.equal(r.status, 200, `GET ${path}: ${r.text}`);
  return r.body;
}

function docs(p: number, subsetLabel = 'v1'): unknown[] {
  return [
    serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
    workloadEntry('echo-v1', { port: p, labels: { app: 'echo', version: subsetLabel } }),
    destinationRule('echo', { host: HOST, subsets: { v1: { version: 'v1' } } }),
    virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST, 'v1')] }] }),
  ];
}

/** Walks LDS → RDS → CDS → EDS, ACKing each; afterwards every response is ACKed automatically. */
async function connectAndSync(pod: string): Promise<AdsStream> {
  const s = open(proxylessAdsNode(pod));
  s.subscribe(TYPE.LDS, [LISTENER]);
  const lds = await s.next(TYPE.LDS);
  s.ack(lds.resp);
  const [l] = decodeResources(lds.resp, ListenerSchema);
  const route = l ? listenerRouteName(l) : undefined;
  assert.ok(route);
  s.subscribe(TYPE.RDS, [route]);
  const rds = await s.next(TYPE.RDS);
  s.ack(rds.resp);
  const [rc] = decodeResources(rds.resp, RouteConfigurationSchema);
  assert.ok(rc);
  s.subscribe(TYPE.CDS, routeClusters(rc));
  const cds = await s.next(TYPE.CDS);
  s.ack(cds.resp);
  const eds = decodeResources(cds.resp, ClusterSchema).map((c) => clusterEdsName(c) ?? '');
  s.subscribe(TYPE.EDS, eds);
  s.ack((await s.next(TYPE.EDS)).resp);
  s.onResponse((r) => s.ack(r.resp));
  return s;
}

describe('debug endpoints', () => {
  let a: AdsStream;

  before(async () => {
    [port = 0] = await freePorts(1);
    dir = tempDir('meshpilot-debug-');
    await writeYaml(dir.path, 'mesh.yaml', docs(port));
    mp = await startMeshpilot({ configDir: dir.path });
    a = await connectAndSync('dbg-a');
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('/version on the monitoring port and the HTTP (debug) port answers the package version (meshctl version --remote reads it)', async () => {
    for (const addr of [mp!.monitoringAddr, mp!.httpAddr]) {
      const res = await fetch(`http://${addr}/version`);
      assert.equal(res.status, 200, addr);
      assert.equal((await res.text()).trim(), packageVersion());
    }
    assert.match(packageVersion(), /^\d+\.\d+\.\d+/);
  });

  it('/debug/list names every endpoint, on both HTTP servers', async () => {
    assert.ok(mp);
    for (const addr of [mp.httpAddr, mp.monitoringAddr]) {
      const list = await getJson('/debug/list', addr);
      assert.ok(Array.isArray(list));
      for (const name of ['syncz', 'config_dump', 'adsz', 'push_status', 'configz', 'registryz', 'cachez']) {
        assert.ok(list.includes(name), `${name} missing from /debug/list on ${addr}: ${JSON.stringify(list)}`);
      }
    }
  });

  it('/debug/syncz: per proxy and type, nonces, versions and SYNCED after the ACKs', async () => {
    const entries = (await getJson('/debug/syncz', mp?.monitoringAddr)) as Json[];
    const e = entries.find((x) => x.proxy === a.node.id);
    assert.ok(e, JSON.stringify(entries));
    assert.equal(e.proxy_type, 'sidecar');
    assert.ok(typeof e.listener_sent === 'string' && e.listener_sent !== '');
    assert.equal(e.listener_acked, e.listener_sent);
    const types = e.types as Record<string, Json>;
    for (const t of ['LDS', 'RDS', 'CDS', 'EDS']) {
      assert.equal(types[t]?.status, 'SYNCED', `${t}: ${JSON.stringify(types[t])}`);
      assert.equal(types[t]?.nonceAcked, types[t]?.nonceSent);
      assert.notEqual(types[t]?.versionAcked, '');
    }
    assert.deepEqual(types.LDS?.resourceNames, [LISTENER]);
  });

  it('/debug/config_dump: an Envoy ConfigDump with typed Anys; by node id or pod.namespace; 400/404 otherwise', async () => {
    for (const id of [a.node.id, 'dbg-a.default']) {
      const dump = (await getJson(`/debug/config_dump?proxyID=${encodeURIComponent(id)}`)) as { configs: Json[] };
      const byType = new Map(dump.configs.map((c) => [c['@type'], c]));
      const clusters = byType.get(`${ADMIN}ClustersConfigDump`) as { dynamic_active_clusters: { cluster: Json }[] } | undefined;
      assert.ok(clusters, JSON.stringify([...byType.keys()]));
      assert.equal(clusters.dynamic_active_clusters[0]?.cluster['@type'], 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
      assert.equal(clusters.dynamic_active_clusters[0]?.cluster.name, `outbound|8080|v1|${HOST}`);
      const listeners = byType.get(`${ADMIN}ListenersConfigDump`) as {
        dynamic_listeners: { name: string; active_state: { listener: Json } }[];
      };
      assert.equal(listeners.dynamic_listeners[0]?.name, LISTENER);
      assert.equal(listeners.dynamic_listeners[0]?.active_state.listener['@type'], 'type.googleapis.com/envoy.config.listener.v3.Listener');
      const routes = byType.get(`${ADMIN}RoutesConfigDump`) as { dynamic_route_configs: { route_config: Json }[] };
      assert.equal(routes.dynamic_route_configs[0]?.route_config['@type'], 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration');
      const eps = byType.get(`${ADMIN}EndpointsConfigDump`) as { dynamic_endpoint_configs: { endpoint_config: Json }[] };
      assert.equal(
        eps.dynamic_endpoint_configs[0]?.endpoint_config['@type'],
        'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
      );
    }
    const unknown = await get('/debug/config_dump?proxyID=nobody.nowhere');
    assert.equal(unknown.status, 404);
    assert.match(unknown.text, /nobody\.nowhere.*not connected/);
    assert.equal((await get('/debug/config_dump')).status, 400);
  });

  it('/debug/adsz lists connections with their watches; /debug/registryz, /debug/cachez, /debug/memz, /debug/configz', async () => {
    const adsz = (await getJson('/debug/adsz')) as { totalClients: number; clients: Json[] };
    assert.ok(adsz.totalClients >= 1);
    const c = adsz.clients.find((x) => x.proxy === a.node.id);
    assert.ok(c);
    assert.equal(typeof c.connectionId, 'string');
    assert.deepEqual((c.watches as Record<string, string[]>)[TYPE.LDS], [LISTENER]);

    const reg = (await getJson('/debug/registryz')) as Json[];
    const svc = reg.find((s) => s.hostname === HOST);
    assert.ok(svc, JSON.stringify(reg));
    assert.equal(svc.resolution, 'STATIC');
    assert.equal(svc.endpoints, 1);
    assert.deepEqual(
      (svc.ports as Json[]).map((p) => [p.port, p.protocol, p.endpoints]),
      [[8080, 'GRPC', 1]],
    );

    const cache = (await getJson('/debug/cachez')) as Json;
    for (const k of ['size', 'hits', 'misses', 'evictions']) assert.equal(typeof cache[k], 'number', k);
    assert.ok((cache.size as number) > 0);

    const mem = (await getJson('/debug/memz')) as {
      collected: boolean;
      rss: number;
      heapUsed: number;
      heapTotal: number;
      heapSpaces: Record<string, { size: number; used: number }>;
    };
    assert.equal(mem.collected, false, 'meshpilot runs without --expose-gc here');
    assert.ok(mem.rss > mem.heapUsed && mem.heapTotal >= mem.heapUsed && mem.heapUsed > 0, JSON.stringify(mem));
    assert.ok((mem.heapSpaces.old_space?.used ?? 0) > 0, JSON.stringify(mem.heapSpaces));

    const cfg = (await getJson('/debug/configz')) as { configs: Json[]; errors: unknown[] };
    const se = cfg.configs.find((x) => x.kind === 'ServiceEntry');
    assert.ok(se);
    assert.equal(se.apiVersion, 'networking.istio.io/v1');
    assert.deepEqual((se.metadata as Json).name, 'echo');
    assert.deepEqual((se.spec as Json).hosts, [HOST]);
    assert.deepEqual(cfg.errors, []);
  });

  it('/debug/configz shows current config errors', async () => {
    assert.ok(dir);
    await writeYaml(dir.path, 'bad.yaml', [
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'bad', namespace: 'default' },
        spec: { hosts: [] },
      },
    ]);
    const errors = await waitFor(
      async () => {
        const cfg = (await getJson('/debug/configz')) as { errors: Json[] };
        return cfg.errors.length > 0 ? cfg.errors : undefined;
      },
      { description: 'a config error in /debug/configz' },
    );
    assert.equal(typeof errors[0]?.message, 'string');
    assert.match(String(errors[0]?.message), /bad/);
  });

  it('a config change is tracked to convergence in /debug/push_status and logged', async () => {
    assert.ok(dir && mp);
    const mark = mp.mark();
    await writeYaml(dir.path, 'mesh.yaml', docs(port + 1));
    const change = await waitFor(
      async () => {
        const ps = (await getJson('/debug/push_status', mp?.monitoringAddr)) as { changes: Json[] };
        return ps.changes.find((c) => (c.configs as string[]).includes('WorkloadEntry/default/echo-v1') && c.state === 'converged');
      },
      { description: 'the WorkloadEntry change converged' },
    );
    assert.ok((change.proxies as number) >= 1);
    assert.equal(change.acked, change.proxies);
    assert.deepEqual(change.pending, []);
    assert.equal(typeof change.convergenceMs, 'number');
    const line = await mp.waitForLog((l) => l.json?.msg === 'config change converged' && l.json.change === change.id, { since: mark });
    assert.equal(line.json?.level, 'info');
    const ps = (await getJson('/debug/push_status')) as Json;
    assert.equal(typeof ps.version, 'string');
    assert.equal(typeof (ps.lastPush as Json).proxiesQueued, 'number');
  });

  it('/debug/adsz?push=true forces a push; a NACKing proxy shows up as nacked', async () => {
    const b = open(proxylessAdsNode('dbg-nack'));
    b.subscribe(TYPE.LDS, [LISTENER]);
    b.ack((await b.next(TYPE.LDS)).resp);
    b.onResponse((r) => b.nack(r.resp, 'rejected on purpose'));
    const pushed = await get('/debug/adsz?push=true');
    assert.equal(pushed.status, 200);
    assert.match(pushed.text, /^Pushed to \d+ servers/);
    const change = await waitFor(
      async () => {
        const ps = (await getJson('/debug/push_status')) as { changes: Json[] };
        return ps.changes.find((c) => (c.reasons as Json).debug !== undefined && c.state !== 'in-progress');
      },
      { description: 'the forced push finished' },
    );
    assert.equal(change.state, 'nacked');
    const nacks = change.nacked as Json[];
    assert.deepEqual(
      nacks.map((n) => [n.proxy, n.type, n.message]),
      [[b.node.id, 'LDS', 'rejected on purpose']],
    );
    const syncz = (await getJson('/debug/syncz')) as Json[];
    const e = syncz.find((x) => x.proxy === b.node.id);
    assert.equal((e?.types as Record<string, Json>).LDS?.status, 'NACKED');
    assert.equal(((e?.types as Record<string, Json>).LDS?.lastNack as Json).message, 'rejected on purpose');
  });

  it('serves istio.io/debug/syncz and istio.io/debug/config_dump over ADS', async () => {
    const c = open(proxylessAdsNode('dbg-tool'));
    c.subscribe('istio.io/debug/syncz', []);
    const sz = await c.next('istio.io/debug/syncz');
    const configs = sz.resp.resources.map((r) => {
      assert.equal(r.typeUrl, 'type.googleapis.com/envoy.service.status.v3.ClientConfig');
      return fromBinary(ClientConfigSchema, r.value);
    });
    const mine = configs.find((x) => x.node?.id === a.node.id);
    assert.ok(mine, configs.map((x) => x.node?.id).join(','));
    const lds = mine.genericXdsConfigs.find((g) => g.typeUrl === TYPE.LDS);
    assert.equal(lds?.configStatus, ConfigStatus.SYNCED);

    c.subscribe('istio.io/debug/config_dump', [a.node.id]);
    const cd = await c.next('istio.io/debug/config_dump');
    const types = cd.resp.resources.map((r) => r.typeUrl);
    assert.ok(types.includes(`${ADMIN}ClustersConfigDump`), types.join(','));
    assert.ok(types.includes(`${ADMIN}ListenersConfigDump`));
  });
});
