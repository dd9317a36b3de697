/**
 * meshpilot's sidecar routing proven with real upstream Envoy sidecars carrying real HTTP between
 * pods in network namespaces, captured by meshpilot's own iptables rules (test/support/envoy-mesh).
 * Every assertion counts responses the client in the `sleep` pod got, or requests an app saw.
 *
 * Each scenario has its own service over the echo pods and writes its own config file; a route
 * sets the response header `x-scenario`, so a test knows its VirtualService is in force before it
 * counts, and a DestinationRule-only change is awaited in the client Envoy's config_dump.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { netnsSkipReason } from '../support/cni/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import {
  OTHER_NS,
  WORKLOADS,
  host,
  istio,
  showTally,
  useEnvoyMesh,
  versionSubsets,
  type EchoService,
} from '../support/envoy-mesh/fixture.js';
import type { EnvoyMesh } from '../support/envoy-mesh/mesh.js';
import type { RequestBatch, Tally } from '../support/envoy-mesh/netns-apps.js';
import { waitFor } from '../support/wait.js';

const skip = netnsSkipReason() ?? envoySkipReason();
let mesh: EnvoyMesh;

const show = showTally;
const count = (t: Tally, key: string): number => t.by[key] ?? t.statuses[key] ?? 0;
const url = (service: EchoService, path = '/'): string => mesh.url(service, 'demo', path);
const marker = (name: string) => ({ headers: { response: { set: { 'x-scenario': name } } } });
const outbound = (service: string, subset = ''): string => `outbound|8080|${subset}|${host(service)}`;

/** A VirtualService on `service` whose every route is marked with the response header x-scenario. */
function vs(service: EchoService, http: Record<string, unknown>[], scenario: string = service): Record<string, unknown> {
  return istio('VirtualService', service, { hosts: [host(service)], http: http.map((r) => ({ ...marker(scenario), ...r })) });
}
const to = (service: string, subset?: string, weight?: number): Record<string, unknown> => ({
  destination: { host: host(service), ...(subset ? { subset } : {}) },
  ...(weight !== undefined ? { weight } : {}),
});

/** A counter of `cluster` in sleep's Envoy (stat names carry istiod's `;`-delimited alt_stat_name). */
async function clusterStat(cluster: string, stat: string): Promise<number | undefined> {
  const stats = await mesh.stats('sleep', new RegExp(`\\.${stat.replace(/\./g, '\\.')}$`));
  return stats.get(`cluster.${cluster};.${stat}`) ?? stats.get(`cluster.${cluster}.${stat}`);
}

/** Writes the scenario's file and waits until `batch` from sleep is answered under `scenario`'s routes. */
async function applyRoutes(file: string, docs: Record<string, unknown>[], batch: Omit<RequestBatch, 'n'>, scenario: string): Promise<void> {
  await mesh.apply(file, docs);
  await mesh.until(
    'sleep',
    { ...batch, n: 2 },
    (t) => t.samples.length > 0 && t.samples.every((s) => s.headers['x-scenario'] === scenario),
  );
  // The probe took one route; a route to a subset cluster still warming would answer 503.
  for (const subset of subsetClusters(docs)) {
    await waitFor(async () => (await mesh.cluster('sleep', subset)) !== undefined, {
      timeoutMs: 30_000,
      description: `${subset} active in sleep's Envoy`,
    });
  }
}

/** The subset clusters the DestinationRules among `docs` define. */
function subsetClusters(docs: readonly Record<string, unknown>[]): string[] {
  return docs.flatMap((d) => {
    const spec = d.spec as { host?: string; subsets?: { name: string }[] };
    return d.kind === 'DestinationRule' ? (spec.subsets ?? []).map((x) => `outbound|8080|${x.name}|${spec.host}`) : [];
  });
}

/** Writes the scenario's file and waits until sleep's Envoy has `cluster` satisfying `ok`. */
async function applyCluster(file: string, docs: unknown[], cluster: string, ok: (c: Record<string, unknown>) => boolean): Promise<void> {
  await mesh.apply(file, docs);
  await waitFor(
    async () => {
      const c = await mesh.cluster('sleep', cluster);
      return c !== undefined && ok(c);
    },
    { timeoutMs: 30_000, description: `${cluster} updated in sleep's Envoy` },
  );
}

describe('VirtualService and DestinationRule through real Envoy sidecars', { skip }, () => {
  const started = useEnvoyMesh();
  before(() => {
    mesh = started();
  });

  it('without routing rules both echo pods answer, through both sidecars (the app sees Envoy headers)', async () => {
    const t = await mesh.until('sleep', { url: url('echo'), n: 40 }, (x) => x.statuses['200'] === 40);
    assert.ok(count(t, 'echo-v1') > 0 && count(t, 'echo-v2') > 0 && count(t, 'echo-v1') + count(t, 'echo-v2') === 40, show(t));
    const seen = JSON.parse(t.samples[0]!.body) as { headers: Record<string, string> };
    assert.ok(seen.headers['x-request-id'], 'the client sidecar set x-request-id');
    assert.match(
      seen.headers['x-forwarded-client-cert'] ?? '',
      /URI=spiffe:\/\/cluster\.local\/ns\/demo\/sa\/sleep/,
      'the server sidecar saw the client certificate',
    );
  });

  it('weights 80/20 hold within ±5 % over 1000 requests', async (c) => {
    await applyRoutes(
      'split.yaml',
      [versionSubsets('split'), vs('split', [{ route: [to('split', 'v1', 80), to('split', 'v2', 20)] }])],
      { url: url('split') },
      'split',
    );
    const t = await mesh.pod('sleep').client.run({ url: url('split'), n: 1000, concurrency: 8 });
    assert.equal(t.statuses['200'], 1000, show(t));
    const v1 = count(t, 'echo-v1') / 10;
    assert.ok(Math.abs(v1 - 80) <= 5, `v1 got ${v1} % (${show(t)})`);
    c.diagnostic(`1000 requests: ${JSON.stringify(t.by)} in ${t.elapsedMs} ms`);
    assert.equal(count(t, 'echo-v1') + count(t, 'echo-v2'), 1000);
  });

  it('header and path matches pick the subset; the rest take the default route', async () => {
    await applyRoutes(
      'match.yaml',
      [
        versionSubsets('match'),
        vs('match', [
          { match: [{ headers: { 'x-user': { exact: 'jason' } } }], route: [to('match', 'v2')] },
          { match: [{ uri: { prefix: '/v2/' } }], route: [to('match', 'v2')] },
          { route: [to('match', 'v1')] },
        ]),
      ],
      { url: url('match') },
      'match',
    );
    const client = mesh.pod('sleep').client;
    const byHeader = await client.run({ url: url('match'), n: 50, headers: { 'x-user': 'jason' } });
    const byPath = await client.run({ url: url('match', '/v2/item'), n: 50 });
    const rest = await client.run({ url: url('match', '/v1/item'), n: 50, headers: { 'x-user': 'mary' } });
    assert.deepEqual(
      [byHeader.by, byPath.by, rest.by],
      [{ 'echo-v2': 50 }, { 'echo-v2': 50 }, { 'echo-v1': 50 }],
      [byHeader, byPath, rest].map(show).join('\n'),
    );
  });

  it('fault injection: abort answers the status without reaching the app; delay holds the request', async (c) => {
    await applyRoutes(
      'fault.yaml',
      [
        vs('fault', [
          {
            match: [{ headers: { 'x-fault': { exact: 'abort' } } }],
            fault: { abort: { httpStatus: 418, percentage: { value: 100 } } },
            route: [to('fault')],
          },
          {
            match: [{ headers: { 'x-fault': { exact: 'half' } } }],
            fault: { abort: { httpStatus: 503, percentage: { value: 50 } } },
            route: [to('fault')],
          },
          {
            match: [{ headers: { 'x-fault': { exact: 'delay' } } }],
            fault: { delay: { fixedDelay: '0.5s', percentage: { value: 100 } } },
            route: [to('fault')],
          },
          { route: [to('fault')] },
        ]),
      ],
      { url: url('fault') },
      'fault',
    );
    const client = mesh.pod('sleep').client;
    const seenBefore = mesh.pod('echo-v1').app.seen.length + mesh.pod('echo-v2').app.seen.length;
    const abort = await client.run({ url: url('fault'), n: 50, headers: { 'x-fault': 'abort' } });
    assert.deepEqual(abort.statuses, { 418: 50 }, show(abort));
    assert.equal(
      mesh.pod('echo-v1').app.seen.length + mesh.pod('echo-v2').app.seen.length,
      seenBefore,
      'aborted requests never reach an app',
    );
    const half = await client.run({ url: url('fault'), n: 200, headers: { 'x-fault': 'half' }, concurrency: 4 });
    assert.ok(
      Math.abs((half.statuses['503'] ?? 0) - 100) <= 25 && (half.statuses['503'] ?? 0) + (half.statuses['200'] ?? 0) === 200,
      show(half),
    );
    const delayed = await client.run({ url: url('fault'), n: 4, headers: { 'x-fault': 'delay' } });
    assert.deepEqual(delayed.statuses, { 200: 4 }, show(delayed));
    // Envoy's timer and the client's clock differ by a millisecond or two per request (1999 ms was seen for 4).
    assert.ok(delayed.elapsedMs >= 4 * 490, `4 sequential requests delayed 0.5 s each took ${delayed.elapsedMs} ms`);
    c.diagnostic(
      `abort 100 %: ${JSON.stringify(abort.statuses)}; abort 50 %: ${JSON.stringify(half.statuses)}; delay: 4 requests in ${delayed.elapsedMs} ms`,
    );
  });

  it('retries: a backend failing every other request still succeeds from the client', async () => {
    const failing = { 'x-echo-fail-every': '2', 'x-echo-fail-status': '500' };
    await applyRoutes(
      'retry.yaml',
      [
        versionSubsets('retry'),
        vs('retry', [
          { match: [{ headers: { 'x-retries': { exact: 'none' } } }], retries: { attempts: 0 }, route: [to('retry', 'v1')] },
          { retries: { attempts: 3, retryOn: '5xx' }, route: [to('retry', 'v1')] },
        ]),
      ],
      { url: url('retry') },
      'retry',
    );
    const client = mesh.pod('sleep').client;
    const app = mesh.pod('echo-v1').app;
    const without = await client.run({ url: url('retry'), n: 100, headers: { ...failing, 'x-retries': 'none' } });
    assert.deepEqual(without.statuses, { 200: 50, 500: 50 }, `without retries every other request fails: ${show(without)}`);
    const seen = app.seen.length;
    const t = await client.run({ url: url('retry'), n: 100, headers: failing });
    assert.deepEqual(t.statuses, { 200: 100 }, show(t));
    // The app's counter continues from the batch above (100, even): the first request succeeds,
    // every later one fails once and succeeds on its retry.
    assert.equal(app.seen.length - seen, 199, 'each failed attempt was retried once');
  });

  it('timeout: a backend slower than the route timeout gives 504', async () => {
    await applyRoutes('slow.yaml', [vs('slow', [{ timeout: '0.5s', route: [to('slow')] }])], { url: url('slow') }, 'slow');
    const t = await mesh.pod('sleep').client.run({ url: url('slow'), n: 6, concurrency: 6, headers: { 'x-echo-delay-ms': '3000' } });
    assert.deepEqual(t.statuses, { 504: 6 }, show(t));
    assert.match(t.samples[0]!.body, /upstream request timeout/);
    assert.ok(t.elapsedMs < 2500, `answered at the timeout, not after the backend (${t.elapsedMs} ms)`);
    const fast = await mesh.pod('sleep').client.run({ url: url('slow'), n: 6, headers: { 'x-echo-delay-ms': '50' } });
    assert.deepEqual(fast.statuses, { 200: 6 }, show(fast));
  });

  it('mirror: the mirror backend in another namespace gets a copy of every request', async () => {
    const mirror = mesh.pod('mirror').app;
    await applyRoutes(
      'shadow.yaml',
      [
        versionSubsets('shadow'),
        vs('shadow', [{ route: [to('shadow', 'v1')], mirror: { host: host('mirror', OTHER_NS) }, mirrorPercentage: { value: 100 } }]),
      ],
      { url: url('shadow') },
      'shadow',
    );
    const before = mirror.seen.filter((s) => s.path === '/shadowed').length;
    const t = await mesh.pod('sleep').client.run({ url: url('shadow', '/shadowed'), n: 50 });
    assert.deepEqual(t.by, { 'echo-v1': 50 }, `the client only sees the primary: ${show(t)}`);
    await waitFor(() => mirror.seen.filter((s) => s.path === '/shadowed').length - before === 50, {
      description: '50 mirrored requests',
      timeoutMs: 10_000,
    }).catch(() => assert.fail(`mirror saw ${mirror.seen.filter((s) => s.path === '/shadowed').length - before}`));
    const copy = mirror.seen.find((s) => s.path === '/shadowed')!;
    // istiod's default (DISABLE_SHADOW_HOST_SUFFIX): the copy keeps the original authority.
    assert.equal(copy.host, `${host('shadow')}:8080`);
  });

  it('rewrite changes uri and authority on the way; redirect answers 301 with the new location', async () => {
    await applyRoutes(
      'rewrite.yaml',
      [
        vs('rewrite', [
          { match: [{ uri: { prefix: '/old/' } }], rewrite: { uri: '/new/', authority: 'rewritten.example' }, route: [to('rewrite')] },
          { match: [{ uri: { prefix: '/moved' } }], redirect: { uri: '/landing', authority: 'elsewhere.example' } },
          { route: [to('rewrite')] },
        ]),
      ],
      { url: url('rewrite') },
      'rewrite',
    );
    const client = mesh.pod('sleep').client;
    const rw = await client.run({ url: url('rewrite', '/old/page?q=1'), n: 10 });
    assert.deepEqual(rw.statuses, { 200: 10 }, show(rw));
    const seen = JSON.parse(rw.samples[0]!.body) as { path: string; host: string };
    assert.deepEqual([seen.path, seen.host], ['/new/page?q=1', 'rewritten.example']);
    const rd = await client.run({ url: url('rewrite', '/moved'), n: 10 });
    assert.deepEqual(rd.statuses, { 301: 10 }, show(rd));
    assert.equal(rd.samples[0]!.headers.location, 'http://elsewhere.example/landing');
  });

  it('ROUND_ROBIN alternates the endpoints; consistentHash on a header keeps a user on one endpoint', async () => {
    await applyCluster(
      'hash.yaml',
      [
        istio('DestinationRule', 'echo', { host: host('echo'), trafficPolicy: { loadBalancer: { simple: 'ROUND_ROBIN' } } }),
        istio('DestinationRule', 'hash', {
          host: host('hash'),
          trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: 'x-user' } } },
        }),
      ],
      outbound('hash'),
      (c) => c.lb_policy === 'RING_HASH' || c.lb_policy === 'MAGLEV',
    );
    await waitFor(async () => (await mesh.cluster('sleep', outbound('echo')))?.lb_policy === undefined, {
      description: 'echo ROUND_ROBIN',
      timeoutMs: 30_000,
    });
    const client = mesh.pod('sleep').client;
    const roundRobin = await client.run({ url: url('echo'), n: 100 });
    assert.ok(
      Math.abs(count(roundRobin, 'echo-v1') - 50) <= 2 && count(roundRobin, 'echo-v1') + count(roundRobin, 'echo-v2') === 100,
      show(roundRobin),
    );
    const owners = new Set<string>();
    for (const user of ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']) {
      const t = await client.run({ url: url('hash'), n: 20, headers: { 'x-user': user } });
      assert.equal(Object.keys(t.by).length, 1, `${user} stuck to one endpoint: ${show(t)}`);
      owners.add(Object.keys(t.by)[0]!);
    }
    assert.equal(owners.size, 2, 'different users land on both endpoints');
  });

  it('outlier detection ejects the failing endpoint: the rest of the requests all succeed', async (c) => {
    await applyCluster(
      'outlier.yaml',
      [
        istio('DestinationRule', 'outlier', {
          host: host('outlier'),
          trafficPolicy: {
            loadBalancer: { simple: 'ROUND_ROBIN' },
            outlierDetection: { consecutive5xxErrors: 2, interval: '1s', baseEjectionTime: '60s', maxEjectionPercent: 100 },
          },
        }),
      ],
      outbound('outlier'),
      (c) => c.outlier_detection !== undefined,
    );
    // echo-v2 answers 500 (not retried by Istio's default policy, which retries 503).
    const t = await mesh
      .pod('sleep')
      .client.run({ url: url('outlier'), n: 100, headers: { 'x-echo-fail-on': 'echo-v2', 'x-echo-fail-status': '500' } });
    // Two consecutive 500s eject echo-v2; the ejection is applied on Envoy's main thread, so the
    // worker may send it one or two more before it takes effect.
    assert.ok(
      (t.statuses['500'] ?? 0) >= 2 && (t.statuses['500'] ?? 0) <= 4 && count(t, 'echo-v1') + (t.statuses['500'] ?? 0) === 100,
      show(t),
    );
    assert.equal(await clusterStat(outbound('outlier'), 'outlier_detection.ejections_enforced_total'), 1);
    c.diagnostic(`100 requests, echo-v2 failing: ${JSON.stringify(t.by)}`);
  });

  it('connection-pool limits: concurrent requests beyond one connection and one pending overflow to 503', async (c) => {
    await applyCluster(
      'pool.yaml',
      [
        istio('DestinationRule', 'pool', {
          host: host('pool'),
          trafficPolicy: { connectionPool: { tcp: { maxConnections: 1 }, http: { http1MaxPendingRequests: 1, maxRetries: 0 } } },
        }),
      ],
      outbound('pool'),
      (c) => JSON.stringify(c.circuit_breakers ?? {}).includes('"max_connections":1'),
    );
    const t = await mesh.pod('sleep').client.run({ url: url('pool'), n: 20, concurrency: 20, headers: { 'x-echo-delay-ms': '500' } });
    assert.ok(
      (t.statuses['503'] ?? 0) >= 10 && (t.statuses['200'] ?? 0) >= 1 && (t.statuses['503'] ?? 0) + (t.statuses['200'] ?? 0) === 20,
      show(t),
    );
    assert.ok(
      t.samples.some((s) => s.status === 503 && s.headers['x-envoy-overloaded'] === 'true'),
      `Envoy's own overflow answer: ${show(t)}`,
    );
    assert.equal(await clusterStat(outbound('pool'), 'upstream_rq_pending_overflow'), t.statuses['503']);
    c.diagnostic(`20 concurrent requests: ${JSON.stringify(t.statuses)}`);
  });

  it('query, method and regex matches; request headers set and removed on the way, a response header removed', async () => {
    const v1Headers = {
      request: { set: { 'x-added': 'yes' }, remove: ['x-secret'] },
      response: { set: { 'x-scenario': 'headers' }, remove: ['x-echo-name'] },
    };
    await applyRoutes(
      'headers.yaml',
      [
        versionSubsets('headers'),
        vs('headers', [
          { match: [{ queryParams: { v: { exact: '2' } } }], route: [to('headers', 'v2')] },
          { match: [{ method: { exact: 'PUT' } }], route: [to('headers', 'v2')] },
          { match: [{ uri: { regex: '/items/[0-9]+' } }], route: [to('headers', 'v2')] },
          { route: [to('headers', 'v1')], headers: v1Headers },
        ]),
      ],
      { url: url('headers') },
      'headers',
    );
    const client = mesh.pod('sleep').client;
    const runs = await Promise.all([
      client.run({ url: url('headers', '/any?v=2'), n: 10 }),
      client.run({ url: url('headers', '/any'), n: 10, method: 'PUT' }),
      client.run({ url: url('headers', '/items/42'), n: 10 }),
      client.run({ url: url('headers', '/items/abc?v=1'), n: 10, headers: { 'x-secret': 'hush' } }),
    ]);
    assert.deepEqual(
      runs.map((t) => t.by),
      [{ 'echo-v2': 10 }, { 'echo-v2': 10 }, { 'echo-v2': 10 }, { 'echo-v1': 10 }],
      runs.map(show).join('\n'),
    );
    const rest = runs[3]!;
    const seen = JSON.parse(rest.samples[0]!.body) as { headers: Record<string, string> };
    assert.deepEqual(
      [seen.headers['x-added'], seen.headers['x-secret']],
      ['yes', undefined],
      'request headers set and removed before the app',
    );
    assert.equal(rest.samples[0]!.headers['x-echo-name'], undefined, 'response header removed before the client');
  });

  it('CORS: an allowed origin gets its preflight answered by the sidecar; another origin gets no allow header', async () => {
    const cors = {
      allowOrigins: [{ exact: 'https://app.example' }],
      allowMethods: ['GET', 'POST'],
      allowHeaders: ['x-custom'],
      maxAge: '1h',
    };
    await applyRoutes('cors.yaml', [vs('cors', [{ route: [to('cors')], corsPolicy: cors }])], { url: url('cors') }, 'cors');
    const preflight = (origin: string) => ({
      url: url('cors'),
      n: 5,
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-custom' },
    });
    const seenBefore = mesh.pod('echo-v1').app.seen.length + mesh.pod('echo-v2').app.seen.length;
    const ok = await mesh.pod('sleep').client.run(preflight('https://app.example'));
    assert.deepEqual(ok.statuses, { 200: 5 }, show(ok));
    const h = ok.samples[0]!.headers;
    assert.deepEqual(
      [h['access-control-allow-origin'], h['access-control-allow-methods'], h['access-control-allow-headers'], h['access-control-max-age']],
      ['https://app.example', 'GET,POST', 'x-custom', '3600'],
      JSON.stringify(h),
    );
    assert.equal(
      mesh.pod('echo-v1').app.seen.length + mesh.pod('echo-v2').app.seen.length,
      seenBefore,
      'the preflight was answered by the client sidecar',
    );
    const other = await mesh.pod('sleep').client.run(preflight('https://evil.example'));
    assert.ok(
      other.samples.every((x) => x.headers['access-control-allow-origin'] === undefined),
      show(other),
    );
  });

  it('h2UpgradePolicy UPGRADE: the sidecars speak HTTP/2 to each other, the app still gets HTTP/1.1', async () => {
    await applyCluster(
      'h2.yaml',
      [istio('DestinationRule', 'h2', { host: host('h2'), trafficPolicy: { connectionPool: { http: { h2UpgradePolicy: 'UPGRADE' } } } })],
      outbound('h2'),
      (c) => JSON.stringify(c).includes('http2_protocol_options'),
    );
    const t = await mesh.pod('sleep').client.run({ url: url('h2'), n: 20 });
    assert.deepEqual(t.statuses, { 200: 20 }, show(t));
    assert.ok(
      ((await clusterStat(outbound('h2'), 'upstream_cx_http2_total')) ?? 0) >= 1,
      'sleep opened HTTP/2 connections to the echo sidecars',
    );
    assert.equal(await clusterStat(outbound('h2'), 'upstream_cx_http1_total'), 0);
    assert.equal((JSON.parse(t.samples[0]!.body) as { httpVersion: string }).httpVersion, '1.1');
  });

  it('outbound passthrough: ALLOW_ANY reaches a pod outside the registry; a Sidecar with REGISTRY_ONLY and egress ./* blocks it and the other namespace', async () => {
    const plainUrl = `http://${WORKLOADS.find((w) => w.name === 'plain')!.ip}:8080/`;
    const client = mesh.pod('sleep').client;
    const open = await client.run({ url: plainUrl, n: 5 });
    assert.deepEqual(open.by, { plain: 5 }, `PassthroughCluster to the original destination: ${show(open)}`);
    const mirrorUrl = mesh.url('mirror', OTHER_NS);
    assert.deepEqual((await client.run({ url: mirrorUrl, n: 5 })).by, { mirror: 5 });
    await mesh.apply('sidecar.yaml', [
      istio('Sidecar', 'sleep', {
        workloadSelector: { labels: { app: 'sleep' } },
        egress: [{ hosts: ['./*'] }],
        outboundTrafficPolicy: { mode: 'REGISTRY_ONLY' },
      }),
    ]);
    await mesh.until('sleep', { url: plainUrl, n: 5 }, (x) => x.statuses['502'] === 5);
    const otherNs = await client.run({ url: mirrorUrl, n: 5 });
    assert.equal(otherNs.statuses['200'], undefined, `mirror.other is outside the egress scope: ${show(otherNs)}`);
    const inScope = await client.run({ url: url('echo'), n: 5 });
    assert.deepEqual(inScope.statuses, { 200: 5 }, show(inScope));
    await mesh.apply('sidecar.yaml', undefined);
    await mesh.until('sleep', { url: plainUrl, n: 5 }, (x) => x.by.plain === 5);
  });

  it('egress to a MESH_EXTERNAL ServiceEntry host: under REGISTRY_ONLY only the declared host gets out, routed by its Host header', async () => {
    // The pod outside the mesh stands for the external API: its address is the entry's endpoint.
    const plain = WORKLOADS.find((w) => w.name === 'plain')!;
    const plainUrl = `http://${plain.ip}:8080/`;
    const client = mesh.pod('sleep').client;
    const external = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'external-api', namespace: 'demo' },
      spec: {
        hosts: ['api.external.test'],
        location: 'MESH_EXTERNAL',
        resolution: 'STATIC',
        ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }],
        endpoints: [{ address: plain.ip }],
      },
    };
    const registryOnly = istio('Sidecar', 'sleep', {
      workloadSelector: { labels: { app: 'sleep' } },
      outboundTrafficPolicy: { mode: 'REGISTRY_ONLY' },
    });
    await mesh.apply('egress.yaml', [registryOnly]);
    await mesh.until('sleep', { url: plainUrl, n: 5, headers: { host: 'api.external.test' } }, (x) => x.statuses['502'] === 5);
    await mesh.apply('egress.yaml', [registryOnly, external]);
    await mesh.until('sleep', { url: plainUrl, n: 5, headers: { host: 'api.external.test' } }, (x) => x.by.plain === 5);
    const out = await client.run({ url: plainUrl, n: 20, headers: { host: 'api.external.test' } });
    assert.deepEqual(out.by, { plain: 20 }, `through outbound|8080||api.external.test: ${show(out)}`);
    assert.ok(
      ((await clusterStat('outbound|8080||api.external.test', 'upstream_rq_total')) ?? 0) >= 20,
      'counted on the ServiceEntry cluster',
    );
    const undeclared = await client.run({ url: plainUrl, n: 5, headers: { host: 'other.external.test' } });
    assert.equal(undeclared.by.plain, undefined, `an undeclared host stays blocked: ${show(undeclared)}`);
    await mesh.apply('egress.yaml', undefined);
  });

  it('a config edit converges: file write → the traffic follows (milliseconds reported)', async (t) => {
    const all = (subset: 'v1' | 'v2') => [versionSubsets('echo'), vs('echo', [{ route: [to('echo', subset)] }], `echo-${subset}`)];
    await applyRoutes('converge.yaml', all('v1'), { url: url('echo') }, 'echo-v1');
    const figures: number[] = [];
    for (const subset of ['v2', 'v1', 'v2', 'v1', 'v2'] as const) {
      const started = performance.now();
      await mesh.apply('converge.yaml', all(subset));
      // Single requests back to back: the first answered by the new subset ends the measurement.
      const after = await mesh.until('sleep', { url: url('echo'), n: 1 }, (x) => x.by[`echo-${subset}`] === 1, {
        timeoutMs: 20_000,
        pauseMs: 10,
      });
      figures.push(Math.round(performance.now() - started));
      assert.equal(after.samples[0]?.headers['x-scenario'], `echo-${subset}`);
      const steady = await mesh.pod('sleep').client.run({ url: url('echo'), n: 20 });
      assert.deepEqual(steady.by, { [`echo-${subset}`]: 20 }, `all traffic moved: ${show(steady)}`);
    }
    const sorted = [...figures].sort((a, b) => a - b);
    t.diagnostic(`file write → traffic on the new subset, ms: ${figures.join(', ')} (median ${sorted[2]})`);
    assert.ok(sorted[4]! < 10_000, `converged within 10 s each time: ${figures.join(', ')}`);
  });
});
