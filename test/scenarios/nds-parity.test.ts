/**
 * meshpilot's DNS name tables against the real istiod's, captured by
 * `npx tsx scripts/istiod-nds-golden.ts`: testdata/nds/istiod.json for the ServiceEntries of
 * testdata/nds/config (istiod in file mode), testdata/nds/istiod-kube.json for the Kubernetes
 * objects of testdata/nds/cluster (istiod on a real API server; meshpilot's registry translates the
 * same objects here). For every proxy, the WHOLE
 * NameTable — every host, its addresses, registry, short name and namespace — must be equal, after
 * the normalisation below. Any other difference fails, with each differing host named. There is
 * no list of accepted differences: none is left.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import { NameTableSchema } from '../../src/gen/dns/proto/nds_pb.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { pushRequest } from '../../src/model/push-request.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { loadScenario, proxyFor, type NodeSpec } from '../support/scenario.js';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { defaultMeshConfig } from '../../src/config/mesh/mesh-config.js';
import { PushContext } from '../../src/model/push-context.js';
import { snapshotOf } from '../support/config-fixture.js';

const snapshotOfNothing = (): ReturnType<typeof snapshotOf> => snapshotOf([]);
import { KubeRegistrySnapshot } from '../../src/registry/kube/kube-snapshot.js';
import { convertService, podServesIp, serviceEndpoints, type PodLookup } from '../../src/registry/kube/translate.js';
import { loadClusterState } from '../support/ambient/cluster-state.js';
import {
  NDS_CLUSTER_DIR,
  NDS_CONFIG_DIR,
  NDS_GOLDEN,
  NDS_KUBE_GOLDEN,
  NDS_KUBE_PROXIES,
  NDS_PROXIES,
  ndsConfigDigest,
  type NdsGolden,
} from './nds-fixture.js';

interface NameInfo {
  ips?: string[];
  registry?: string;
  shortname?: string;
  namespace?: string;
}
type Table = Record<string, NameInfo>;

/**
 * Normalised: the order of a host's addresses. istiod's differs between its own runs (a
 * ServiceEntry with several addresses is one service per address, merged in an order that is not
 * stable), and the agent shuffles the addresses of every answer anyway.
 */
function normalise(t: Table): Table {
  return Object.fromEntries(
    Object.entries(t)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([h, i]) => [h, { ...i, ips: [...(i.ips ?? [])].sort() }]),
  );
}

/**
 * The Kubernetes registry of testdata/nds/cluster, through the registry's own translation
 * (Services, EndpointSlices, Pods), plus the `kubernetes` Service the API server makes for itself.
 */
function kubeRegistry(): KubeRegistrySnapshot {
  const objects = loadClusterState(NDS_CLUSTER_DIR).map(
    (l) => l.object as unknown as { kind: string; metadata: { name: string; namespace?: string } },
  );
  const pods = objects.filter((o) => o.kind === 'Pod') as V1Pod[];
  const slices = objects.filter((o) => o.kind === 'EndpointSlice') as V1EndpointSlice[];
  const services = [
    ...(objects.filter((o) => o.kind === 'Service') as V1Service[]),
    {
      metadata: { name: 'kubernetes', namespace: 'default' },
      spec: { clusterIP: '10.96.0.1', clusterIPs: ['10.96.0.1'], ports: [{ name: 'https', port: 443, targetPort: 6443, protocol: 'TCP' }] },
    },
  ];
  const lookup: PodLookup = {
    podByName: (ns, name) => pods.find((p) => p.metadata?.namespace === ns && p.metadata.name === name),
    podsByIp: (ip) => pods.filter((p) => podServesIp(p) && p.status?.podIP === ip),
    node: () => undefined,
  };
  const entries = new Map(
    services.map((svc) => {
      const service = convertService(svc, 'cluster.local');
      const own = slices.filter(
        (sl) =>
          sl.metadata?.namespace === svc.metadata?.namespace && sl.metadata?.labels?.['kubernetes.io/service-name'] === svc.metadata?.name,
      );
      return [service.hostname, { service, endpoints: serviceEndpoints(service, svc, own, lookup) }] as const;
    }),
  );
  return new KubeRegistrySnapshot(entries);
}

function tablesOf(push: PushContext, specs: readonly NodeSpec[]): Map<string, Table> {
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  const out = new Map<string, Table>();
  for (const spec of specs) {
    const proxy = proxyFor(spec);
    const gen = generators.lookup(proxy, TypeUrl.NameTable);
    assert.ok(gen, `no NDS generator for ${proxy.type}`);
    const res = gen.generate(
      proxy,
      { typeUrl: TypeUrl.NameTable, names: new Set(), wildcard: true },
      push,
      pushRequest({ full: true, reason: 'config', start: 0 }),
    );
    assert.equal(res.length, 1, 'one NameTable per proxy');
    assert.equal(res[0]!.name, '', 'unnamed, as istiod sends it');
    out.set(spec.id, (toJson(NameTableSchema, fromBinary(NameTableSchema, res[0]!.value)) as { table?: Table }).table ?? {});
  }
  return out;
}

/** Every host of every proxy that differs between the golden and meshpilot, named. */
function differences(golden: NdsGolden, ours: ReadonlyMap<string, Table>): string[] {
  const problems: string[] = [];
  for (const { id, table } of golden.proxies) {
    const want = normalise((table as { table?: Table }).table ?? {});
    const got = normalise(ours.get(id) ?? {});
    for (const host of new Set([...Object.keys(want), ...Object.keys(got)])) {
      if (JSON.stringify(want[host]) === JSON.stringify(got[host])) continue;
      problems.push(`${id} ${host}: istiod ${JSON.stringify(want[host])} | meshpilot ${JSON.stringify(got[host])}`);
    }
  }
  return problems;
}

describe('NDS parity with istiod', () => {
  const golden = JSON.parse(readFileSync(NDS_GOLDEN, 'utf8')) as NdsGolden;
  const kubeGolden = JSON.parse(readFileSync(NDS_KUBE_GOLDEN, 'utf8')) as NdsGolden;

  it('the goldens are of the current config (else recapture: npx tsx scripts/istiod-nds-golden.ts)', () => {
    assert.equal(golden.configDigest, ndsConfigDigest());
    assert.equal(kubeGolden.configDigest, ndsConfigDigest(NDS_CLUSTER_DIR));
    assert.deepEqual(
      golden.proxies.map((p) => p.id),
      NDS_PROXIES.map((p) => p.id),
    );
    assert.deepEqual(
      kubeGolden.proxies.map((p) => p.id),
      NDS_KUBE_PROXIES.map((p) => p.id),
    );
  });

  it("every proxy gets istiod's whole name table for the ServiceEntry corpus (file mode)", async () => {
    const { push } = await loadScenario(NDS_CONFIG_DIR);
    assert.deepEqual(differences(golden, tablesOf(push, NDS_PROXIES)), []);
  });

  it("every proxy gets istiod's whole name table for Kubernetes Services: short names, headless pods", () => {
    const push = new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: snapshotOfNothing(), registries: [kubeRegistry()] });
    assert.deepEqual(differences(kubeGolden, tablesOf(push, NDS_KUBE_PROXIES)), []);
  });
});
