/**
 * IST0170 on the analyzer model: each cluster's Services from scenario files, the remote ones as
 * --remote-contexts would add them (the command with a real API server: analyze/kube-loader.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logLine } from '../analyze/format.js';
import { loadInputs } from '../analyze/loader.js';
import type { RemoteCluster, Snapshot } from '../analyze/model.js';
import { runAnalyzers } from '../analyze/run.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../../config/constants.js';
import { multiClusterServicesAnalyzer } from './multicluster-services.js';
import { REPO_ROOT, scenario } from './test-helper.js';

const f = (n: string): string => scenario('multicluster-services', n);

async function load(file: string): Promise<Snapshot> {
  const { snapshot, parseErrors } = await loadInputs({
    args: [file],
    recursive: false,
    defaultNamespace: 'default',
    cwd: REPO_ROOT,
    rootNamespace: ISTIO_SYSTEM_NAMESPACE,
  });
  assert.deepEqual(parseErrors, []);
  return snapshot;
}

/** A remote cluster as the cluster loader makes it: its Services, without file positions. */
async function remote(id: string, file: string): Promise<RemoteCluster> {
  const services = (await load(file)).objects.filter((o) => o.ref.kind === 'Service');
  return { id, services: services.map(({ ref: { origin: _origin, ...ref }, ...o }) => ({ ...o, ref })) };
}

async function analyze(remoteClusters: readonly RemoteCluster[]): Promise<string[]> {
  const primary = await load(f('primary.yaml'));
  return runAnalyzers([multiClusterServicesAnalyzer], { ...primary, remoteClusters }, { namespace: undefined, suppress: [] }).map((m) =>
    logLine(m, false),
  );
}

const D = 'testdata/meshctl/analyze/multicluster-services';
const text = (name: string, clusters: string, reasons: string): string =>
  `The service ${name} in namespace "shop" is inconsistent across clusters ${clusters}, which can lead to undefined behaviors. The inconsistent behaviors are: ${reasons}.`;

test('IST0170 for a Service whose ports, type or headless mode differ between clusters, named on the primary', async () => {
  assert.deepEqual(await analyze([await remote('west', f('west.yaml')), await remote('east', f('east.yaml'))]), [
    `Warning [IST0170] (Service shop/ratings ${D}/primary.yaml:14) ${text('ratings', '["default" "west"]', 'service has mixed mode like headless and clusterIP')}`,
    `Warning [IST0170] (Service shop/reviews ${D}/primary.yaml:2) ${text('reviews', '["default" "east" "west"]', 'service ports are inconsistent; service type is inconsistent')}`,
  ]);
});

test('one remote cluster: only what differs from it', async () => {
  assert.deepEqual(await analyze([await remote('east', f('east.yaml'))]), [
    `Warning [IST0170] (Service shop/reviews ${D}/primary.yaml:2) ${text('reviews', '["default" "east"]', 'service type is inconsistent')}`,
  ]);
});

test('a Service only in a remote cluster is named there, without a file', async () => {
  const west = await remote('west', f('west.yaml'));
  const otherWest = await remote('west2', f('west.yaml'));
  const changed: RemoteCluster = {
    id: 'west2',
    services: otherWest.services.map((s) =>
      s.ref.name === 'only-west' ? { ...s, body: { ...s.body, spec: { type: 'ExternalName', externalName: 'x.example.com' } } } : s,
    ),
  };
  const lines = (await analyze([west, changed])).filter((l) => l.includes('only-west'));
  assert.deepEqual(lines, [
    `Warning [IST0170] (Service shop/only-west) ${text('only-west', '["west" "west2"]', 'service ports are inconsistent; service type is inconsistent')}`,
  ]);
});

test('files only (no remote cluster): nothing to compare', async () => {
  assert.deepEqual(await analyze([]), []);
});
