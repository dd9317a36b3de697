/**
 * The ADS protocol driven by hand. A raw SotW client (protobuf-es over
 * grpc-js) checks what real clients rely on: the Listener for a `host:port` name, ACK → silence,
 * NACK → logged and not re-pushed, an unknown type URL does not break the stream, and a reconnect
 * that carries an old version/nonce still gets the full config.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { freePorts } from '../support/ports.js';
import { levelOf, startMeshpilot, type LogLine, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode, type AdsNode, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { quietWindow, waitFor } from '../support/wait.js';
import {
  clusterEdsName,
  decodeResources,
  endpointAddresses,
  listenerHcm,
  listenerRouteName,
  routeClusters,
  TYPE,
} from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;
const OTHER_HOST = 'other.default.svc.cluster.local';
const OTHER_LISTENER = `${OTHER_HOST}:8080`;
const UNKNOWN_TYPE = 'type.googleapis.com/foo.Bar';
/** How long "nothing more arrives" is watched for. */
const QUIET_MS = 1500;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backendPorts: number[] = [];
const streams: AdsStream[] = [];

function open(node: AdsNode): AdsStream {
  assert.ok(mp);
  const s = AdsStream.open(mp.grpcAddr, { node });
  streams.push(s);
  return s;
}

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(25) ?? '(not running)'}`;
}

/** Does the log line carry `value` as a field value, or as a delimited token in its text? */
function mentions(l: LogLine, value: string): boolean {
  const leaves = (v: unknown): string[] =>
    typeof v === 'string' || typeof v === 'number' ? [String(v)] : v && typeof v === 'object' ? Object.values(v).flatMap(leaves) : [];
  if (leaves(l.json).some((x) => x === value)) return true;
  const esc = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_-])${esc}($|[^A-Za-z0-9_-])`).test(l.raw);
}

function summary(r: Received): string {
  return `${r.resp.typeUrl} v=${r.resp.versionInfo} nonce=${r.resp.nonce} resources=${r.resp.resources.length}`;
}

/** Asserts that nothing at all arrives on `s` for QUIET_MS. */
async function assertQuiet(s: AdsStream, why: string): Promise<void> {
  s.drain();
  await quietWindow(QUIET_MS);
  const got = s.drain();
  assert.deepEqual(got.map(summary), [], withLogs(`${why}: expected no response within ${QUIET_MS} ms`));
  assert.ok(s.isOpen(), `stream ended: ${JSON.stringify(s.end)}`);
}

/** Subscribes LDS for `names`, returns the first LDS response. */
async function getListeners(s: AdsStream, names: readonly string[]): Promise<Received> {
  s.subscribe(TYPE.LDS, names);
  return s.next(TYPE.LDS);
}

async function metricSum(name: string): Promise<number> {
  assert.ok(mp);
  const res = await fetch(`http://${mp.monitoringAddr}/metrics`);
  assert.equal(res.status, 200, `GET /metrics on ${mp.monitoringAddr}`);
  const text = await res.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('raw ADS (state of the world)', () => {
  before(async () => {
    backendPorts = await freePorts(2);
    dir = tempDir('meshpilot-raw-ads-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      serviceEntry('other', { host: OTHER_HOST, selector: { app: 'other' } }),
      workloadEntry('echo-v1', { port: backendPorts[0] ?? 0, labels: { app: 'echo', version: 'v1' } }),
      workloadEntry('other-v1', { port: backendPorts[1] ?? 0, labels: { app: 'other', version: 'v1' } }),
      destinationRule('echo', { host: HOST, subsets: { v1: { version: 'v1' } } }),
      virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST, 'v1')] }] }),
    ]);
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('LDS for host:port returns that Listener (api_listener → HCM); an ACK gets no further response', async () => {
    const s = open(proxylessAdsNode('raw-lds'));
    const r = await getListeners(s, [LISTENER]);
    assert.equal(r.resp.typeUrl, TYPE.LDS);
    assert.notEqual(r.resp.nonce, '', 'response without a nonce');
    assert.notEqual(r.resp.versionInfo, '', 'response without a version');
    const listeners = decodeResources(r.resp, ListenerSchema);
    assert.deepEqual(
      listeners.map((l) => l.name),
      [LISTENER],
    );
    const [l] = listeners;
    assert.ok(l);
    const hcm = listenerHcm(l);
    assert.ok(hcm, 'proxyless Listener needs an api_listener holding an HttpConnectionManager');
    assert.equal(hcm.httpFilters.at(-1)?.name, 'envoy.filters.http.router', 'HCM filter chain must end with the router');
    assert.ok(listenerRouteName(l), 'Listener should use RDS (route_config_name)');

    s.ack(r.resp);
    await assertQuiet(s, 'after ACK');
  });

  it('follows LDS → RDS → CDS → EDS like a real client; the endpoints are the WorkloadEntry', async () => {
    const s = open(proxylessAdsNode('raw-chain'));
    const lds = await getListeners(s, [LISTENER]);
    s.ack(lds.resp);
    const [l] = decodeResources(lds.resp, ListenerSchema);
    assert.ok(l);
    const routeName = listenerRouteName(l);
    assert.ok(routeName);

    s.subscribe(TYPE.RDS, [routeName]);
    const rds = await s.next(TYPE.RDS);
    s.ack(rds.resp);
    const routes = decodeResources(rds.resp, RouteConfigurationSchema);
    assert.deepEqual(
      routes.map((x) => x.name),
      [routeName],
    );
    const [rc] = routes;
    assert.ok(rc);
    const clusters = routeClusters(rc);
    assert.deepEqual(clusters, [`outbound|8080|v1|${HOST}`], 'the VirtualService routes everything to subset v1');

    s.subscribe(TYPE.CDS, clusters);
    const cds = await s.next(TYPE.CDS);
    s.ack(cds.resp);
    const cls = decodeResources(cds.resp, ClusterSchema);
    assert.deepEqual(
      cls.map((c) => c.name),
      clusters,
    );
    const edsNames = cls.map((c) => clusterEdsName(c));
    assert.ok(
      edsNames.every((n) => n !== undefined),
      'proxyless clusters must be EDS clusters',
    );

    s.subscribe(TYPE.EDS, edsNames as string[]);
    const eds = await s.next(TYPE.EDS);
    s.ack(eds.resp);
    const [cla] = decodeResources(eds.resp, ClusterLoadAssignmentSchema);
    assert.ok(cla);
    const addrs = endpointAddresses(cla);
    assert.deepEqual(addrs, [`127.0.0.1:${backendPorts[0]}`]);
    assert.ok(
      cla.endpoints.every((le) => (le.loadBalancingWeight ?? 0) > 0),
      'grpc-js-xds needs locality load_balancing_weight',
    );
    await assertQuiet(s, 'after ACKing all four types');
  });

  it('changing the subscribed names (ACK-looking request) is answered with every subscribed Listener', async () => {
    const s = open(proxylessAdsNode('raw-names'));
    const first = await getListeners(s, [LISTENER]);
    s.ack(first.resp);
    s.subscribe(TYPE.LDS, [LISTENER, OTHER_LISTENER]);
    const second = await s.next(TYPE.LDS);
    const names = decodeResources(second.resp, ListenerSchema)
      .map((l) => l.name)
      .sort();
    assert.deepEqual(names, [LISTENER, OTHER_LISTENER].sort(), 'SotW LDS must hold every subscribed Listener');
    assert.notEqual(second.resp.nonce, first.resp.nonce);
  });

  it('a NACK is logged at warn (proxy, type, nonce, error), is not re-pushed, and the stream stays usable', async () => {
    assert.ok(mp);
    const node = proxylessAdsNode('raw-nack');
    const s = open(node);
    const r = await getListeners(s, [LISTENER]);
    const since = mp.mark();
    const detail = 'raw-ads test: listener rejected on purpose';
    s.nack(r.resp, detail);

    const proxyId = 'raw-nack.default';
    const line = await mp.waitForLog((x) => levelOf(x) === 'warn' && x.raw.includes(detail) && mentions(x, r.resp.nonce), {
      since,
      description: `a warn line with the NACK's error detail and nonce ${r.resp.nonce}`,
    });
    assert.ok(
      line.raw.includes(node.id) || mentions(line, proxyId) || line.raw.includes(`${proxyId}-`),
      `NACK log does not name the proxy: ${line.raw}`,
    );
    assert.ok(line.raw.includes(TYPE.LDS) || /\bLDS\b/.test(line.raw), `NACK log does not name the type: ${line.raw}`);

    await assertQuiet(s, 'after NACK (no re-push of the rejected config)');

    // The stream is still alive and serves other types.
    const [l] = decodeResources(r.resp, ListenerSchema);
    const routeName = l ? listenerRouteName(l) : undefined;
    assert.ok(routeName);
    s.subscribe(TYPE.RDS, [routeName]);
    const rds = await s.next(TYPE.RDS);
    assert.deepEqual(
      decodeResources(rds.resp, RouteConfigurationSchema).map((x) => x.name),
      [routeName],
    );
  });

  it('a NACK is counted in pilot_total_xds_rejects on the monitoring port', async () => {
    assert.ok(mp);
    const s = open(proxylessAdsNode('raw-nack-metric'));
    const r = await getListeners(s, [LISTENER]);
    const before = await metricSum('pilot_total_xds_rejects');
    s.nack(r.resp, 'raw-ads test: counted rejection');
    const after = await waitFor(
      async () => {
        const v = await metricSum('pilot_total_xds_rejects');
        return v > before ? v : false;
      },
      { timeoutMs: 5000, description: 'pilot_total_xds_rejects to grow' },
    );
    assert.equal(after, before + 1, 'one NACK, one reject counted');
  });

  it('an unknown type URL does not break the stream', async () => {
    const s = open(proxylessAdsNode('raw-unknown'));
    s.subscribe(UNKNOWN_TYPE, ['anything']);
    // Answered with an empty response, or ignored: either is acceptable; a stream error is not.
    const reply = await s.next(UNKNOWN_TYPE, QUIET_MS).catch(() => undefined);
    assert.ok(s.isOpen(), withLogs(`stream ended after an unknown type: ${JSON.stringify(s.end)}`));
    if (reply) {
      assert.equal(reply.resp.resources.length, 0, `unexpected resources for ${UNKNOWN_TYPE}: ${summary(reply)}`);
      s.ack(reply.resp);
      await assertQuiet(s, `after ACKing the ${UNKNOWN_TYPE} response`);
    }
    const lds = await getListeners(s, [LISTENER]);
    assert.deepEqual(
      decodeResources(lds.resp, ListenerSchema).map((l) => l.name),
      [LISTENER],
    );
    assert.ok(mp?.alive());
  });

  for (const variant of ['old version and old nonce', 'old version and empty nonce'] as const) {
    it(`a reconnect of the same node with ${variant} gets the full config again`, async () => {
      const node = proxylessAdsNode(`raw-reconnect-${variant.includes('empty') ? 'empty' : 'old'}`);
      const s1 = open(node);
      const lds1 = await getListeners(s1, [LISTENER]);
      s1.ack(lds1.resp);
      const [l] = decodeResources(lds1.resp, ListenerSchema);
      const routeName = l ? listenerRouteName(l) : undefined;
      assert.ok(routeName);
      s1.subscribe(TYPE.RDS, [routeName]);
      const rds1 = await s1.next(TYPE.RDS);
      s1.ack(rds1.resp);
      s1.close();
      await s1.ended;

      // Like a client after a control-plane restart: every subscription at once, old versions.
      const s2 = open(node);
      const nonce = (r: Received): string => (variant.includes('empty') ? '' : r.resp.nonce);
      s2.send({ typeUrl: TYPE.LDS, resourceNames: [LISTENER], versionInfo: lds1.resp.versionInfo, responseNonce: nonce(lds1) });
      s2.send({ typeUrl: TYPE.RDS, resourceNames: [routeName], versionInfo: rds1.resp.versionInfo, responseNonce: nonce(rds1) });
      const lds2 = await s2.next(TYPE.LDS);
      const rds2 = await s2.next(TYPE.RDS);
      assert.deepEqual(
        decodeResources(lds2.resp, ListenerSchema).map((x) => x.name),
        [LISTENER],
      );
      assert.deepEqual(
        decodeResources(rds2.resp, RouteConfigurationSchema).map((x) => x.name),
        [routeName],
      );
      assert.deepEqual(
        lds2.resp.resources.map((a) => Buffer.from(a.value).toString('hex')),
        lds1.resp.resources.map((a) => Buffer.from(a.value).toString('hex')),
        'same config, same Listener',
      );
      s2.ack(lds2.resp);
      s2.ack(rds2.resp);
      await assertQuiet(s2, 'after ACKing the reconnect responses');
    });
  }
});
