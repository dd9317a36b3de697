/**
 * An invalid file dropped into the watched directory gives a clear error in
 * meshpilot's log (file, kind, namespace/name, field path), does not crash it, and the previous
 * config keeps routing real grpc-js-xds traffic.
 *
 * "Keeps routing" must be observed after meshpilot has acted on the bad file, not merely soon
 * after writing it: each test then flips a second, independent service ("sentinel") to a new
 * subset and waits until the client sees that. The client's config is then at least as new as the
 * bad file, so unchanged echo routing proves the bad object was not applied.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startGrpcBackends, type GrpcBackend } from '../support/grpc-backend.js';
import { levelOf, startMeshpilot, type LogLine, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { callMany, closeXdsChannels, failures, proxylessNode, useXdsBootstrap, waitForTally } from '../support/xds-client.js';
import { removeFile, writeFileAtomic, writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const TARGET = `xds:///${HOST}:8080`;
const SENTINEL_HOST = 'sentinel.default.svc.cluster.local';
const SENTINEL_TARGET = `xds:///${SENTINEL_HOST}:8080`;
const VS_FILE = 'echo-virtual-service.yaml';
const VS_NAME = 'echo-routes';
const SUBSETS = { v1: { version: 'v1' }, v2: { version: 'v2' }, v3: { version: 'v3' } };

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backends: GrpcBackend[] = [];
let sentinelSubset = 'v1';

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(25) ?? '(not running)'}`;
}

function echoVs(http: unknown[]): unknown {
  return virtualService(VS_NAME, { hosts: [HOST], http });
}

function sentinelVs(subset: string): unknown {
  return virtualService('sentinel-routes', { hosts: [SENTINEL_HOST], http: [{ route: [dest(SENTINEL_HOST, subset)] }] });
}

/** Moves the sentinel service to the next subset and waits until the client routes there. */
async function syncThroughSentinel(): Promise<void> {
  assert.ok(dir);
  sentinelSubset = sentinelSubset === 'v1' ? 'v3' : 'v1';
  const want = sentinelSubset;
  await writeYaml(dir.path, 'sentinel-virtual-service.yaml', [sentinelVs(want)]);
  await waitForTally(SENTINEL_TARGET, 10, (t) => t.counts[want] === 10, { description: `sentinel on ${want}` });
}

/** The previous config (echo → 100% v2) still routes every RPC. */
async function assertEchoStillOnV2(): Promise<void> {
  const t = await callMany(TARGET, 100);
  assert.deepEqual(t.counts, { v2: 100 }, withLogs(`the previous config stopped routing: ${JSON.stringify(t)}`));
}

/** Puts the good echo VirtualService back (so one failing test does not cascade into the next). */
async function restoreEcho(): Promise<void> {
  assert.ok(dir);
  await writeYaml(dir.path, VS_FILE, [echoVs([{ route: [dest(HOST, 'v2')] }])]);
  await waitForTally(TARGET, 20, (t) => t.counts.v2 === 20, { description: 'echo restored to v2' });
}

function isProblem(l: LogLine): boolean {
  const lvl = levelOf(l);
  return lvl === 'error' || lvl === 'warn';
}

/** A warn/error line (after `since`) that contains every one of `parts`. */
function waitForProblem(since: number, parts: readonly (string | RegExp)[], description: string): Promise<LogLine> {
  assert.ok(mp);
  return mp.waitForLog((l) => isProblem(l) && parts.every((p) => (typeof p === 'string' ? l.raw.includes(p) : p.test(l.raw))), {
    since,
    timeoutMs: 10_000,
    description,
  });
}

describe('invalid config in the watched directory', () => {
  before(async () => {
    backends = await startGrpcBackends(['v1', 'v2', 'v3']);
    dir = tempDir('meshpilot-bad-config-');
    await writeYaml(dir.path, 'services.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      serviceEntry('sentinel', { host: SENTINEL_HOST, selector: { app: 'echo' } }),
      destinationRule('echo', { host: HOST, subsets: SUBSETS }),
      destinationRule('sentinel', { host: SENTINEL_HOST, subsets: SUBSETS }),
    ]);
    await writeYaml(
      dir.path,
      'workloads.yaml',
      backends.map((b) => workloadEntry(`echo-${b.name}`, { port: b.port, labels: { app: 'echo', version: b.name } })),
    );
    await writeYaml(dir.path, VS_FILE, [echoVs([{ route: [dest(HOST, 'v2')] }])]);
    await writeYaml(dir.path, 'sentinel-virtual-service.yaml', [sentinelVs(sentinelSubset)]);
    mp = await startMeshpilot({ configDir: dir.path });
    useXdsBootstrap(mp.grpcAddr, proxylessNode('bad-config-client'));
    await waitForTally(TARGET, 20, (t) => t.counts.v2 === 20, { timeoutMs: 20_000, description: 'echo → v2 at start' });
    await waitForTally(SENTINEL_TARGET, 10, (t) => t.counts[sentinelSubset] === 10, {
      timeoutMs: 20_000,
      description: 'sentinel at start',
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

  it('broken YAML: error names the file; no crash; routing unchanged', async () => {
    assert.ok(dir && mp);
    const since = mp.mark();
    const broken = [
      'apiVersion: networking.istio.io/v1',
      'kind: VirtualService',
      'metadata:',
      '  name: broken-yaml',
      '  namespace: default',
      'spec:',
      '  hosts: [echo.default.svc.cluster.local',
      '  http:',
      '  - route: {destination: {host: echo.default.svc.cluster.local, subset: v3}',
      '',
    ].join('\n');
    await writeFileAtomic(dir.path, 'broken.yaml', broken);
    await syncThroughSentinel();
    assert.ok(mp.alive(), 'meshpilot crashed');
    await assertEchoStillOnV2();
    const line = await waitForProblem(since, ['broken.yaml'], 'an error naming broken.yaml');
    assert.ok(line.json, `log line is not structured JSON: ${line.raw}`);
  });

  it('a VirtualService with an invalid RE2 regex is rejected with file, kind, name and field path; the last good version keeps serving', async () => {
    assert.ok(dir && mp);
    try {
      const since = mp.mark();
      // (?<=…) lookbehind is not RE2. If it reached grpc-js-xds it would crash this test process.
      await writeYaml(dir.path, VS_FILE, [
        echoVs([{ match: [{ uri: { regex: '(?<=a)b' } }], route: [dest(HOST, 'v1')] }, { route: [dest(HOST, 'v3')] }]),
      ]);
      await syncThroughSentinel();
      assert.ok(mp.alive(), 'meshpilot crashed');
      await assertEchoStillOnV2();
      const line = await waitForProblem(
        since,
        [VS_FILE, 'VirtualService', VS_NAME],
        `an error for VirtualService ${VS_NAME} in ${VS_FILE}`,
      );
      assert.match(line.raw, /http\[0\]\.match\[0\]\.uri/, `no field path in: ${line.raw}`);
      assert.match(line.raw, /regex|re2/i, `error does not say what is wrong: ${line.raw}`);
    } finally {
      await restoreEcho();
    }
  });

  // Weights are relative in istiod since Istio 1.15 (istio/istio#39544): a 50/40 split is valid
  // (5:4), so the weight errors istiod still makes are a negative weight or all weights 0.
  it('a VirtualService with a negative route weight is rejected with file, kind, name and field path; the last good version keeps serving', async () => {
    assert.ok(dir && mp);
    try {
      const since = mp.mark();
      await writeYaml(dir.path, VS_FILE, [echoVs([{ route: [dest(HOST, 'v1', -10), dest(HOST, 'v3', 110)] }])]);
      await syncThroughSentinel();
      assert.ok(mp.alive(), 'meshpilot crashed');
      await assertEchoStillOnV2();
      const line = await waitForProblem(
        since,
        [VS_FILE, 'VirtualService', VS_NAME],
        `an error for VirtualService ${VS_NAME} in ${VS_FILE}`,
      );
      assert.match(line.raw, /http\[0\]\.route/, `no field path in: ${line.raw}`);
      assert.match(line.raw, /weight/i, `error does not say what is wrong: ${line.raw}`);
      assert.match(line.raw, /-10/, `error does not give the bad value: ${line.raw}`);
    } finally {
      await restoreEcho();
    }
  });

  it('an invalid object in a multi-document file is rejected alone; the valid objects beside it apply', async () => {
    assert.ok(dir && mp);
    const since = mp.mark();
    const thirdHost = 'third.default.svc.cluster.local';
    await writeYaml(dir.path, 'mixed.yaml', [
      // An invalid RE2 regex in a header matcher (it too would crash a grpc-js-xds client).
      virtualService('extra-bad', {
        hosts: [HOST],
        http: [{ match: [{ headers: { 'x-bad': { regex: 'a(?!b)' } } }], route: [dest(HOST, 'v3')] }],
      }),
      serviceEntry('third', { host: thirdHost, selector: { app: 'echo', version: 'v3' } }),
    ]);
    await syncThroughSentinel();
    assert.ok(mp.alive(), 'meshpilot crashed');
    await assertEchoStillOnV2();
    const line = await waitForProblem(
      since,
      ['mixed.yaml', 'VirtualService', 'extra-bad'],
      'an error for VirtualService extra-bad in mixed.yaml',
    );
    assert.match(line.raw, /http\[0\]\.match\[0\]\.headers/, `no field path in: ${line.raw}`);
    const third = await waitForTally(`xds:///${thirdHost}:8080`, 10, (t) => t.counts.v3 === 10, {
      description: 'the valid ServiceEntry beside the invalid VirtualService serves',
    });
    assert.equal(failures(third), 0);
  });

  it('after the bad files, a valid edit still applies (the watcher is not wedged)', async () => {
    assert.ok(dir && mp);
    await removeFile(dir.path, 'broken.yaml');
    await removeFile(dir.path, 'mixed.yaml');
    await writeYaml(dir.path, VS_FILE, [echoVs([{ route: [dest(HOST, 'v1')] }])]);
    const t = await waitForTally(TARGET, 20, (x) => x.counts.v1 === 20, { description: 'echo → v1 after a valid edit' });
    assert.equal(failures(t), 0);
    assert.ok(mp.alive(), 'meshpilot crashed');
  });
});
