/**
 * Multi-network EDS held whole to istiod's, in each scenario of test/support/multi-network/capture.ts.
 * `one-cluster`: the state of testdata/multi-network/cluster/ (pods and WorkloadEntries in several
 * networks, meshNetworks in the `istio` ConfigMap, gateway Services, an AUTO_PASSTHROUGH Gateway) on a
 * real kube-apiserver. `two-clusters`: multi-primary multi-network on two real kube-apiservers
 * (testdata/multi-network/two-clusters/: network1 and network2 by their system namespaces' labels,
 * an east-west gateway Service in each, echo in both), the second a remote cluster by an
 * istio/multiCluster Secret. meshpilot runs in cluster mode against the first cluster; raw SotW ADS
 * clients connect as the scenario's proxies, exactly as scripts/capture-multi-network-golden.ts did
 * against the real istiod, and every ClusterLoadAssignment is compared with the scenario's golden leaf
 * by leaf; proxyless gRPC clients of `one-cluster` ask for their clusters by name and are compared with
 * testdata/multi-network/istiod/grpc-eds.json the same way. What may differ is listed with its reason in test/support/multi-network/differences.ts;
 * nothing else is left out.
 *
 * MULTI_NETWORK_GOLDEN_SCENARIO=two-clusters runs one scenario only.
 * MULTI_NETWORK_GOLDEN_TARGET=istiod (by hand; needs ../shared/istiod) runs the same test against the
 * real istiod: it must pass, which shows the capture and the comparison are sound.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { startIstiodKube, type RunningIstiod } from '../../scripts/istiod-capture.js';
import { adminRequest, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount } from '../support/kube.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import {
  captureEndpoints,
  captureListeners,
  captureProxylessEndpoints,
  MULTI_NETWORK_CLUSTER_DIR,
  ONE_CLUSTER,
  proxylessDigest,
  SCENARIOS,
  TWO_CLUSTERS,
  scenarioDigest,
  type MultiNetworkScenario,
} from '../support/multi-network/capture.js';
import { startScenarioClusters, SYSTEM_NAMESPACE, type ScenarioClusters } from '../support/multi-network/clusters.js';
import { ACCEPTED, ACCEPTED_LISTENERS, acceptedFor, acceptedListenerDifference } from '../support/multi-network/differences.js';
import type { NodeSpec } from '../support/scenario.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { compareResources, type LeafDiff, type Resource } from '../scenarios/whole/leaves.js';

const TARGETS = ['meshpilot', 'istiod'] as const;
const target = process.env.MULTI_NETWORK_GOLDEN_TARGET ?? 'meshpilot';
if (!(TARGETS as readonly string[]).includes(target))
  throw new Error(`MULTI_NETWORK_GOLDEN_TARGET=${target}: expected one of ${TARGETS.join(', ')}`);

const skip = kubeSkipReason();

interface Golden {
  readonly source: { readonly scenarioSha256: string };
  readonly proxies: Readonly<Record<string, Readonly<Record<string, JsonValue>>>>;
}

function golden(scenario: MultiNetworkScenario, file = scenario.golden, digest = scenarioDigest(scenario)): Golden {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Golden;
  assert.equal(
    doc.source.scenarioSha256,
    digest,
    `${file} was captured from another scenario: run npx tsx scripts/capture-multi-network-golden.ts ${scenario.name}`,
  );
  return doc;
}

const resources = (clas: Readonly<Record<string, JsonValue>>): Resource[] =>
  Object.entries(clas).map(([name, json]) => ({ type: 'endpoint', name, json }));

/** `<type> <name>` → JSON (captureListeners) as resources of the whole comparison. */
const typedResources = (byKey: Readonly<Record<string, JsonValue>>): Resource[] =>
  Object.entries(byKey).map(([key, json]) => {
    const space = key.indexOf(' ');
    return { type: key.slice(0, space), name: key.slice(space + 1), json };
  });

const merge = 'application/merge-patch+json';

/** `address:port` of every endpoint of echo's EDS cluster a proxy is sent. */
async function echoAddresses(grpcAddr: string, spec: NodeSpec): Promise<string[]> {
  const cla = (await captureEndpoints(grpcAddr, spec))['outbound|80||echo.mn.svc.cluster.local'] as JsonObject;
  return JSON.stringify(cla)
    .match(/"address":"[^"]+","portValue":\d+/g)!
    .map((m) => m.replace(/"address":"([^"]+)","portValue":(\d+)/, '$1:$2'));
}

const show = (d: LeafDiff): string =>
  `  ${d.type === 'endpoint' ? '' : `${d.type} `}${d.name} ${d.path || '(whole resource)'}: istiod ${d.istiod ?? 'absent'}, ${target} ${d.meshpilot ?? 'absent'}`;

// MULTI_NETWORK_GOLDEN_SCENARIO=<name> runs one scenario (each starts its own API servers).
const only = process.env.MULTI_NETWORK_GOLDEN_SCENARIO;
if (only !== undefined && !(only in SCENARIOS))
  throw new Error(`MULTI_NETWORK_GOLDEN_SCENARIO=${only}: expected one of ${Object.keys(SCENARIOS).join(', ')}`);

for (const scenario of Object.values(SCENARIOS).filter((s) => only === undefined || s.name === only))
  describe(`multi-network EDS, ${scenario.name}: ${target} against istiod's capture`, { skip }, () => {
    goldenSuite(scenario);
  });

function goldenSuite(scenario: MultiNetworkScenario): void {
  const used = new Set<string>();
  let clusters: ScenarioClusters | undefined;
  let mp: Meshpilot | undefined;
  let istiod: RunningIstiod | undefined;
  let dir: TempDir | undefined;
  let grpcAddr = '';
  // The primary's id, as istiod's CLUSTER_ID and meshpilot's --clusterID (the one-cluster scenario keeps both defaults).
  const clusterEnv = scenario.clusters.length > 1 ? { CLUSTER_ID: scenario.clusters[0].id } : {};

  before(
    async () => {
      clusters = await startScenarioClusters(scenario);
      if (target === 'istiod') {
        istiod = await startIstiodKube(clusters.primary.kubeconfigPath, clusterEnv);
        grpcAddr = istiod.grpcAddr;
      } else {
        dir = tempDir('meshpilot-multi-network-golden-');
        const creds = await meshpilotServiceAccount(clusters.primary, SYSTEM_NAMESPACE);
        mp = await startMeshpilot({
          configDir: dir.path,
          args: ['--kubeconfig', creds.kubeconfigPath],
          env: { POD_NAMESPACE: SYSTEM_NAMESPACE, ...clusterEnv },
          readyTimeoutMs: 60_000,
        });
        grpcAddr = mp.grpcAddr;
      }
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  /** Asserts no difference between istiod's golden and what was captured other than the accepted ones (whose use is recorded). */
  const assertAsIstiod = (
    who: string,
    diffs: ReturnType<typeof compareResources>['diffs'],
    accepted: (d: (typeof diffs)[number]) => { readonly id: string } | undefined,
  ): void => {
    const unexplained = diffs.filter((d) => {
      const a = target === 'meshpilot' ? accepted(d) : undefined;
      if (a) used.add(a.id);
      return a === undefined;
    });
    const logs = mp ? `\n--- meshpilot stderr tail ---\n${mp.tail(20)}` : '';
    assert.equal(
      unexplained.length,
      0,
      `${who}: ${unexplained.length} differences from istiod:\n${unexplained.map(show).join('\n')}${logs}`,
    );
  };

  after(async () => {
    const check = endOfRunCheck(mp);
    await mp?.stop();
    await istiod?.stop();
    await dir?.remove();
    await clusters?.stop();
    check();
  });

  for (const [proxy, spec] of Object.entries(scenario.proxies)) {
    it(`${proxy}: every ClusterLoadAssignment equals the golden`, async () => {
      const expected = golden(scenario).proxies[proxy];
      assert.ok(expected, `${scenario.golden} has no proxy ${proxy}: recapture`);
      const got = await captureEndpoints(grpcAddr, spec);
      const { diffs } = compareResources(resources(expected), resources(got as JsonObject));
      assertAsIstiod(proxy, diffs, (d) => acceptedFor(scenario.name, proxy, d));
    });
  }

  // Proxyless gRPC clients ask for their clusters by name; istiod serves them its sidecars' EDS generator, split horizon included.
  for (const [client, spec] of Object.entries(scenario.proxyless?.clients ?? {})) {
    it(`${client} (proxyless gRPC): every ClusterLoadAssignment it names equals the golden`, async () => {
      const file = scenario.proxyless!.golden;
      const expected = golden(scenario, file, proxylessDigest(scenario)).proxies[client];
      assert.ok(expected, `${file} has no client ${client}: recapture`);
      const got = await captureProxylessEndpoints(grpcAddr, spec);
      const { diffs } = compareResources(resources(expected), resources(got as JsonObject));
      assertAsIstiod(client, diffs, (d) => acceptedFor(scenario.name, client, d));
    });
  }

  // Each cluster's sidecar: its own cluster's ClusterIPs in its listeners and route domains (istiod's ClusterVIPs).
  for (const proxy of scenario.listeners?.proxies ?? []) {
    it(`${proxy}: every Listener and RouteConfiguration equals the golden`, async () => {
      const file = scenario.listeners!.golden;
      const expected = golden(scenario, file).proxies[proxy];
      assert.ok(expected, `${file} has no proxy ${proxy}: recapture`);
      const got = await captureListeners(grpcAddr, scenario.proxies[proxy]!);
      const { diffs } = compareResources(typedResources(expected), typedResources(got as JsonObject));
      assertAsIstiod(proxy, diffs, (d) => acceptedListenerDifference(scenario.name, proxy, d));
    });
  }

  // After the comparisons (it changes the state): the system namespace's label and the ConfigMap are watched.
  it(
    'a network label on the system namespace, then a meshNetworks edit in the ConfigMap, reach the proxies',
    { skip: scenario !== ONE_CLUSTER },
    async () => {
      const cluster = clusters?.primary;
      assert.ok(cluster);
      const echo = (): Promise<string[]> => echoAddresses(grpcAddr, scenario.proxies['sidecar-network1']!);
      // echo-n3-a has no label: the namespace's network (network1, the proxy's) now wins over meshNetworks' fromCidr.
      const ns = await adminRequest(
        cluster.env,
        'PATCH',
        '/api/v1/namespaces/istio-system',
        { metadata: { labels: { 'topology.istio.io/network': 'network1' } } },
        merge,
      );
      assert.equal(ns.status, 200, ns.body);
      await waitFor(async () => (await echo()).includes('10.30.0.1:8080'), {
        timeoutMs: 20_000,
        intervalMs: 500,
        description: 'echo-n3-a sent directly',
      });
      // A gateway for network5: its endpoint goes through it.
      const configMap = readFileSync(join(MULTI_NETWORK_CLUSTER_DIR, '00-namespaces.yaml'), 'utf8');
      const meshNetworks = /meshNetworks: \|\n((?: {4}.*\n?)*)/.exec(configMap)![1]!.replace(/^ {4}/gm, '');
      const edited = `${meshNetworks.trimEnd()}\n  network5:\n    gateways:\n      - address: 192.0.2.50\n        port: 15443\n`;
      const cm = await adminRequest(
        cluster.env,
        'PATCH',
        '/api/v1/namespaces/istio-system/configmaps/istio',
        { data: { meshNetworks: edited } },
        merge,
      );
      assert.equal(cm.status, 200, cm.body);
      await waitFor(async () => (await echo()).includes('192.0.2.50:15443'), {
        timeoutMs: 20_000,
        intervalMs: 500,
        description: "network5's gateway",
      });
      assert.ok(!(await echo()).includes('10.50.0.1:8080'), "network5's endpoint is replaced by its gateway");
    },
  );

  // After the comparisons: a remote cluster's system namespace label is watched in that cluster.
  it(
    "the remote cluster's system namespace moving to network1 sends its endpoints directly",
    { skip: scenario !== TWO_CLUSTERS },
    async () => {
      const remote = clusters?.all[1];
      assert.ok(remote);
      const echo = (): Promise<string[]> => echoAddresses(grpcAddr, scenario.proxies['sidecar-cluster1']!);
      assert.ok((await echo()).includes('192.0.2.21:15443'), "before: cluster2's endpoints through its gateway");
      const ns = await adminRequest(
        remote.env,
        'PATCH',
        `/api/v1/namespaces/${SYSTEM_NAMESPACE}`,
        { metadata: { labels: { 'topology.istio.io/network': 'network1' } } },
        merge,
      );
      assert.equal(ns.status, 200, ns.body);
      await waitFor(async () => (await echo()).includes('10.20.0.1:8080'), {
        timeoutMs: 20_000,
        intervalMs: 500,
        description: 'echo-c2-a sent directly',
      });
      assert.ok(!(await echo()).includes('192.0.2.21:15443'), 'no endpoint of network2 is left behind its gateway');
    },
  );

  it('every accepted difference still explains one', { skip: target !== 'meshpilot' }, () => {
    const stale = [...ACCEPTED, ...ACCEPTED_LISTENERS].filter((a) => a.scenario === scenario.name && !used.has(a.id)).map((a) => a.id);
    assert.deepEqual(
      stale,
      [],
      'these ACCEPTED entries match no difference any more: remove them from test/support/multi-network/differences.ts',
    );
  });
}
