/**
 * Real grpc-js-xds clients routed by meshpilot from a directory of Istio YAML.
 * Three real gRPC backends (v1, v2, v3) registered through ServiceEntry + WorkloadEntry; traffic is
 * shaped by a VirtualService with DestinationRule subsets. One meshpilot per file (grpc-js-xds
 * reads its bootstrap once per process); tests run in order and each sets up what it checks.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGrpcBackends, type GrpcBackend } from '../support/grpc-backend.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import {
  callMany,
  callWhoami,
  closeXdsChannels,
  failures,
  proxylessNode,
  share,
  useXdsBootstrap,
  waitForTally,
} from '../support/xds-client.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const TARGET = `xds:///${HOST}:8080`;
const VS_FILE = 'virtual-service.yaml';
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNAVAILABLE = 14;

/** The VS the file starts with: canary header → v2, two fault routes, default 80/20 v1/v2. */
function mainVirtualService(): unknown {
  return virtualService('echo-routes', {
    hosts: [HOST],
    http: [
      { name: 'canary', match: [{ headers: { 'x-canary': { exact: 'yes' } } }], route: [dest(HOST, 'v2')] },
      {
        name: 'fault-grpc',
        match: [{ headers: { 'x-fault': { exact: 'grpc' } } }],
        fault: { abort: { grpcStatus: 'PERMISSION_DENIED', percentage: { value: 100 } } },
        route: [dest(HOST, 'v1')],
      },
      {
        name: 'fault-http',
        match: [{ headers: { 'x-fault': { exact: 'http' } } }],
        fault: { abort: { httpStatus: 503, percentage: { value: 100 } } },
        route: [dest(HOST, 'v1')],
      },
      { name: 'split', route: [dest(HOST, 'v1', 80), dest(HOST, 'v2', 20)] },
    ],
  });
}

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backends: GrpcBackend[] = [];

function backend(name: string): GrpcBackend {
  const b = backends.find((x) => x.name === name);
  if (!b) throw new Error(`no backend ${name}`);
  return b;
}

/** Fails with meshpilot's recent log lines attached, so a server-side cause is visible. */
function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(25) ?? '(not running)'}`;
}

describe('proxyless gRPC routing (grpc-js-xds ⇄ meshpilot)', () => {
  before(async () => {
    backends = await startGrpcBackends(['v1', 'v2', 'v3']);
    dir = tempDir('meshpilot-routing-');
    await writeYaml(dir.path, 'service-entry.yaml', [serviceEntry('echo', { host: HOST, selector: { app: 'echo' } })]);
    for (const b of backends) {
      await writeYaml(dir.path, `workload-${b.name}.yaml`, [
        workloadEntry(`echo-${b.name}`, { port: b.port, labels: { app: 'echo', version: b.name } }),
      ]);
    }
    await writeYaml(dir.path, 'destination-rule.yaml', [
      destinationRule('echo', { host: HOST, subsets: { v1: { version: 'v1' }, v2: { version: 'v2' }, v3: { version: 'v3' } } }),
    ]);
    await writeYaml(dir.path, VS_FILE, [mainVirtualService()]);
    mp = await startMeshpilot({ configDir: dir.path });
    useXdsBootstrap(mp.grpcAddr, proxylessNode('routing-client'));
    // First RPCs wait for LDS → RDS → CDS → EDS; proceed once a batch fully succeeds.
    await waitForTally(TARGET, 10, (t) => failures(t) === 0, { timeoutMs: 20_000, description: 'first successful RPCs' });
  });

  after(async () => {
    closeXdsChannels();
    // A crash during the tests would otherwise hide behind passing assertions.
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await Promise.all(backends.map((b) => b.stop()));
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('an 80/20 VirtualService split lands within ±7 points over 500 RPCs', async (tc) => {
    const t = await callMany(TARGET, 500);
    tc.diagnostic(`500 RPCs: ${JSON.stringify(t.counts)}`);
    assert.equal(failures(t), 0, withLogs(`RPCs failed: ${JSON.stringify(t.errorDetails)}`));
    assert.equal(t.counts.v3 ?? 0, 0, `v3 is in no route but got ${t.counts.v3} RPCs`);
    const v1 = share(t, 'v1');
    const v2 = share(t, 'v2');
    assert.ok(Math.abs(v1 - 80) <= 7, `v1 got ${v1.toFixed(1)}% (want 80 ± 7): ${JSON.stringify(t.counts)}`);
    assert.ok(Math.abs(v2 - 20) <= 7, `v2 got ${v2.toFixed(1)}% (want 20 ± 7): ${JSON.stringify(t.counts)}`);
  });

  it('a header match (x-canary: yes) sends every such RPC to v2; other RPCs follow the default split', async () => {
    const canary = await callMany(TARGET, 200, { metadata: { 'x-canary': 'yes' } });
    assert.deepEqual(canary.counts, { v2: 200 }, withLogs(`x-canary: yes → ${JSON.stringify(canary)}`));
    // The header did reach the backend (so the match is on a header the client really sends).
    const one = await callWhoami(TARGET, { metadata: { 'x-canary': 'yes' } });
    assert.ok(one.ok && one.reply.headers['x-canary'] === 'yes', `backend did not see x-canary: ${JSON.stringify(one)}`);

    // `exact: yes` must not match a longer value (a prefix match would), nor other values.
    for (const value of ['yes-please', 'no']) {
      const other = await callMany(TARGET, 200, { metadata: { 'x-canary': value } });
      assert.equal(failures(other), 0, withLogs(`x-canary: ${value} failed: ${JSON.stringify(other.errorDetails)}`));
      assert.equal(other.counts.v3 ?? 0, 0, `x-canary: ${value} reached v3: ${JSON.stringify(other.counts)}`);
      assert.ok(
        (other.counts.v1 ?? 0) > (other.counts.v2 ?? 0) && (other.counts.v2 ?? 0) > 0,
        `x-canary: ${value} should follow the 80/20 default, got ${JSON.stringify(other.counts)}`,
      );
    }
  });

  it('a fault abort returns the configured status and never reaches a backend', async () => {
    const hitsBefore = backends.map((b) => b.hits());

    const grpcAbort = await callMany(TARGET, 20, { metadata: { 'x-fault': 'grpc' } });
    assert.deepEqual(
      grpcAbort.errors,
      { [GRPC_PERMISSION_DENIED]: 20 },
      withLogs(`grpcStatus PERMISSION_DENIED → ${JSON.stringify(grpcAbort)}`),
    );
    assert.deepEqual(grpcAbort.counts, {});
    assert.ok(
      grpcAbort.errorDetails.every((d) => d.includes('Fault injected')),
      `not the fault filter: ${JSON.stringify(grpcAbort.errorDetails)}`,
    );

    const httpAbort = await callMany(TARGET, 20, { metadata: { 'x-fault': 'http' } });
    assert.deepEqual(httpAbort.errors, { [GRPC_UNAVAILABLE]: 20 }, withLogs(`httpStatus 503 → ${JSON.stringify(httpAbort)}`));
    // 14 is also "no connection": the details show it came from the fault filter.
    assert.ok(
      httpAbort.errorDetails.every((d) => d.includes('Fault injected')),
      `not the fault filter: ${JSON.stringify(httpAbort.errorDetails)}`,
    );

    assert.deepEqual(
      backends.map((b) => b.hits()),
      hitsBefore,
      'an aborted RPC reached a backend',
    );

    // Unrelated RPCs are unaffected by the fault routes.
    const plain = await callMany(TARGET, 20);
    assert.equal(failures(plain), 0, withLogs(`plain RPCs failed: ${JSON.stringify(plain.errorDetails)}`));
  });

  it('editing the VirtualService file on disk (→ 100% v3) reaches the client within 2 s', async (tc) => {
    assert.ok(dir);
    const before = await callMany(TARGET, 50);
    assert.equal(before.counts.v3 ?? 0, 0, `precondition: no traffic on v3 yet, got ${JSON.stringify(before.counts)}`);

    const written = Date.now();
    await writeYaml(dir.path, VS_FILE, [virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST, 'v3', 100)] }] })]);
    await waitForTally(TARGET, 10, (t) => t.counts.v3 === 10, { timeoutMs: 10_000, description: 'all RPCs on v3' });
    const elapsed = Date.now() - written;
    tc.diagnostic(`client routed by the edited file after ${elapsed} ms`);
    assert.ok(elapsed <= 2000, withLogs(`client saw the edit after ${elapsed} ms (limit 2000 ms)`));

    const after = await callMany(TARGET, 200);
    assert.deepEqual(after.counts, { v3: 200 }, `after the edit every RPC must land on v3: ${JSON.stringify(after)}`);
  });

  it('deleting a WorkloadEntry file removes that backend', async () => {
    assert.ok(dir);
    // Route to the whole service (no subset) so every endpoint takes traffic.
    await writeYaml(dir.path, VS_FILE, [virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST)] }] })]);
    const all = await waitForTally(TARGET, 60, (t) => failures(t) === 0 && ['v1', 'v2', 'v3'].every((n) => (t.counts[n] ?? 0) > 0), {
      description: 'traffic on all of v1, v2, v3',
    });
    assert.equal(Object.keys(all.counts).length, 3);

    await removeFile(dir.path, 'workload-v2.yaml');
    await waitForTally(TARGET, 30, (t) => failures(t) === 0 && (t.counts.v2 ?? 0) === 0, { description: 'no traffic on v2' });

    const v2Hits = backend('v2').hits();
    const t = await callMany(TARGET, 200);
    assert.equal(failures(t), 0, withLogs(`RPCs failed after removing v2: ${JSON.stringify(t.errorDetails)}`));
    assert.equal(t.counts.v2 ?? 0, 0, `RPCs still land on the deleted v2: ${JSON.stringify(t.counts)}`);
    assert.equal(backend('v2').hits(), v2Hits, 'backend v2 still received RPCs');
    assert.ok((t.counts.v1 ?? 0) > 0 && (t.counts.v3 ?? 0) > 0, `v1 and v3 must still serve: ${JSON.stringify(t.counts)}`);
  });
});
