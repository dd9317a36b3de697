/**
 * GAMMA (directory mode): real grpc-js-xds clients routed by meshpilot from
 * Gateway API routes whose parent is a Service. Two real gRPC backends, each its own Service
 * (echo-v1, echo-v2) behind the parent Service `echo`. First a GRPCRoute (70/30 split, a header
 * match), then the file is replaced by an HTTPRoute (path + header match, 30/70 split): the
 * change reaching the client shows that a route edit invalidates and pushes what it should.
 * One meshpilot per file (grpc-js-xds reads its bootstrap once per process).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGrpcBackends, WHOAMI_PATH, type GrpcBackend } from '../support/grpc-backend.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import {
  callMany,
  closeXdsChannels,
  failures,
  proxylessNode,
  share,
  useXdsBootstrap,
  waitForTally,
  type Tally,
} from '../support/xds-client.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const TARGET = 'xds:///echo.default.svc.cluster.local:8080';
const GW = 'gateway.networking.k8s.io/v1';
const PARENT = { group: '', kind: 'Service', name: 'echo', port: 8080 };
const CANARY = { 'x-canary': 'yes' };

const backendRef = (version: string, weight?: number): Record<string, unknown> => ({
  name: `echo-${version}`,
  port: 8080,
  ...(weight !== undefined ? { weight } : {}),
});

function grpcRoute(): unknown {
  return {
    apiVersion: GW,
    kind: 'GRPCRoute',
    metadata: { name: 'echo-grpc', namespace: 'default' },
    spec: {
      parentRefs: [PARENT],
      rules: [
        {
          matches: [{ method: { service: 'echo.Echo', method: 'Whoami' }, headers: [{ name: 'x-canary', value: 'yes' }] }],
          backendRefs: [backendRef('v2')],
        },
        { backendRefs: [backendRef('v1', 70), backendRef('v2', 30)] },
      ],
    },
  };
}

function httpRoute(): unknown {
  return {
    apiVersion: GW,
    kind: 'HTTPRoute',
    metadata: { name: 'echo-http', namespace: 'default' },
    spec: {
      parentRefs: [PARENT],
      rules: [
        {
          matches: [{ path: { type: 'Exact', value: WHOAMI_PATH }, headers: [{ name: 'x-canary', value: 'yes' }] }],
          backendRefs: [backendRef('v1')],
        },
        { matches: [{ path: { type: 'PathPrefix', value: '/echo.Echo' } }], backendRefs: [backendRef('v1', 30), backendRef('v2', 70)] },
      ],
    },
  };
}

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backends: GrpcBackend[] = [];

const withLogs = (msg: string): string => `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(25) ?? '(not running)'}`;

function assertSplit(t: Tally, want: Readonly<Record<string, number>>): void {
  assert.equal(failures(t), 0, withLogs(`RPCs failed: ${JSON.stringify(t.errorDetails)}`));
  for (const [b, pct] of Object.entries(want)) {
    const got = share(t, b);
    assert.ok(Math.abs(got - pct) <= 7, `${b} got ${got.toFixed(1)}% (want ${pct} ± 7): ${JSON.stringify(t.counts)}`);
  }
}

describe('GAMMA routing for proxyless gRPC clients (Gateway API routes from files)', () => {
  before(async () => {
    backends = await startGrpcBackends(['v1', 'v2']);
    dir = tempDir('meshpilot-gamma-');
    // The parent Service has no endpoints of its own: only the routes make it reachable.
    await writeYaml(dir.path, 'services.yaml', [
      serviceEntry('echo', { host: 'echo.default.svc.cluster.local', selector: { app: 'echo' } }),
      ...backends.flatMap((b) => [
        serviceEntry(`echo-${b.name}`, { host: `echo-${b.name}.default.svc.cluster.local`, selector: { app: `echo-${b.name}` } }),
        workloadEntry(`echo-${b.name}`, { port: b.port, labels: { app: `echo-${b.name}` } }),
      ]),
    ]);
    await writeYaml(dir.path, 'route.yaml', [grpcRoute()]);
    mp = await startMeshpilot({ configDir: dir.path });
    useXdsBootstrap(mp.grpcAddr, proxylessNode('gamma-client'));
    // Both weighted children connected before anything is counted (a child still connecting takes
    // no picks, which skews a split measured from the first RPC on a loaded machine).
    await waitForTally(TARGET, 20, (t) => failures(t) === 0 && (t.counts.v1 ?? 0) > 0 && (t.counts.v2 ?? 0) > 0, {
      timeoutMs: 20_000,
      description: 'RPCs answered by both backends',
    });
  });

  after(async () => {
    closeXdsChannels();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await Promise.all(backends.map((b) => b.stop()));
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('a GRPCRoute with a Service parent splits 70/30 over 500 RPCs and a header match sends all to v2', async (tc) => {
    const t = await callMany(TARGET, 500);
    tc.diagnostic(`GRPCRoute 70/30, 500 RPCs: ${JSON.stringify(t.counts)}`);
    assertSplit(t, { v1: 70, v2: 30 });
    const canary = await callMany(TARGET, 200, { metadata: CANARY });
    assert.deepEqual(canary.counts, { v2: 200 }, withLogs(`x-canary: yes → ${JSON.stringify(canary)}`));
  });

  it('replaced by an HTTPRoute (path + header match → v1, 30/70 otherwise), the client follows it', async (tc) => {
    await writeYaml(dir!.path, 'route-http.yaml', [httpRoute()]);
    await removeFile(dir!.path, 'route.yaml');
    await waitForTally(TARGET, 20, (t) => (t.counts.v1 ?? 0) === 20, { metadata: CANARY, description: 'HTTPRoute canary match → v1' });
    const canary = await callMany(TARGET, 200, { metadata: CANARY });
    assert.deepEqual(canary.counts, { v1: 200 }, withLogs(`x-canary: yes → ${JSON.stringify(canary)}`));
    const t = await callMany(TARGET, 500);
    tc.diagnostic(`HTTPRoute 30/70, 500 RPCs: ${JSON.stringify(t.counts)}`);
    assertSplit(t, { v1: 30, v2: 70 });
  });

  it('an invalid route is reported with file, kind, name and field, and the last good one stays', async () => {
    const bad = httpRoute() as { spec: { rules: { backendRefs: Record<string, unknown>[] }[] } };
    const rule = bad.spec.rules[1];
    assert.ok(rule);
    rule.backendRefs = [backendRef('v1', -5)];
    const mark = mp!.mark();
    await writeYaml(dir!.path, 'route-http.yaml', [bad]);
    const want = /HTTPRoute default\/echo-http spec\.rules\[1\]\.backendRefs\[0\]\.weight: must be at least 0, got -5/;
    const line = await mp!.waitForLog((l) => want.test(l.raw), { since: mark, timeoutMs: 10_000, description: 'the weight error' });
    assert.match(line.raw, /route-http\.yaml/);
    const t = await callMany(TARGET, 300);
    assertSplit(t, { v1: 30, v2: 70 });
  });
});
