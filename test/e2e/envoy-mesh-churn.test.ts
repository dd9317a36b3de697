/**
 * The mesh changing under real Envoy sidecars (test/support/envoy-mesh): an endpoint leaves and
 * comes back (EDS-only pushes), a service appears at run time (new clusters, routes and
 * listeners), and meshpilot restarts — the sidecars keep serving on their last config while it
 * is down, reconnect, and take the next edit. Times from file write to traffic are reported.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { netnsSkipReason } from '../support/cni/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import { NS, SERVICES, WORKLOADS, host, istio, showTally as show, useEnvoyMesh, versionSubsets } from '../support/envoy-mesh/fixture.js';
import { fqdn, registryDocs, type EnvoyMesh, type ServiceDef } from '../support/envoy-mesh/mesh.js';
import { waitFor } from '../support/wait.js';

const skip = netnsSkipReason() ?? envoySkipReason();
let mesh: EnvoyMesh;

/** Rewrites the registry (ServiceEntries and WorkloadEntries) and returns when the file is written. */
const registry = (workloads = WORKLOADS, services: readonly ServiceDef[] = SERVICES): Promise<void> =>
  mesh.apply('registry.yaml', registryDocs(workloads, services));

/** Milliseconds from `write` until a batch from sleep satisfies `done`. */
async function timeTo(write: () => Promise<void>, url: string, done: (by: Readonly<Record<string, number>>) => boolean): Promise<number> {
  const started = performance.now();
  await write();
  // A short client timeout: before the push, a new service's VIP is unknown to the sidecar, which
  // passes the request through to an address nothing answers (the kernel gives up after ~3 s).
  await mesh.until('sleep', { url, n: 10, timeoutMs: 250 }, (t) => t.statuses['200'] === 10 && done(t.by), { pauseMs: 10 });
  return Math.round(performance.now() - started);
}

describe('endpoints, services and meshpilot itself changing under real Envoy sidecars', { skip }, () => {
  const started = useEnvoyMesh();
  before(() => {
    mesh = started();
  });

  it('an endpoint leaves and returns: traffic follows the EDS push', async (c) => {
    const url = mesh.url('echo', NS);
    await mesh.until('sleep', { url, n: 20 }, (t) => (t.by['echo-v1'] ?? 0) > 0 && (t.by['echo-v2'] ?? 0) > 0);
    const gone = await timeTo(
      () => registry(WORKLOADS.filter((w) => w.name !== 'echo-v2')),
      url,
      (by) => by['echo-v1'] === 10,
    );
    // Ten answers from v1 can also be chance (istiod's default LEAST_REQUEST picks at random between
    // idle endpoints): the steady state is judged once the sidecar holds one endpoint.
    // Stats carry the cluster's alt_stat_name, istiod's `<name>;`.
    const membership = `cluster.outbound|8080||${fqdn('echo', NS)};.membership_total`;
    await waitFor(async () => (await mesh.stats('sleep', /\.membership_total$/)).get(membership) === 1, {
      timeoutMs: 10_000,
      description: 'the sleep sidecar holds echo-v1 alone',
    });
    const steady = await mesh.pod('sleep').client.run({ url, n: 50 });
    assert.deepEqual(steady.by, { 'echo-v1': 50 }, show(steady));
    const back = await timeTo(
      () => registry(),
      url,
      (by) => (by['echo-v2'] ?? 0) > 0,
    );
    c.diagnostic(`file write → traffic follows: endpoint removed ${gone} ms, endpoint added ${back} ms`);
  });

  it('a service added at run time is routable as soon as it is pushed', async (c) => {
    const late: ServiceDef = { name: 'late', namespace: NS, vip: '10.96.3.10', selector: { app: 'echo', version: 'v2' } };
    const sleep = mesh.pod('sleep').pod;
    sleep.setHosts(new Map([...SERVICES, late].map((s) => [fqdn(s.name, s.namespace), s.vip])));
    const url = mesh.url('echo', NS).replace(host('echo'), host('late'));
    const ms = await timeTo(
      () => registry(WORKLOADS, [...SERVICES, late]),
      url,
      (by) => by['echo-v2'] === 10,
    );
    c.diagnostic(`new ServiceEntry written → first 10 requests answered: ${ms} ms`);
    await registry();
  });

  it('meshpilot restarts: traffic flows while it is down, the sidecars reconnect and take the next edit', async (c) => {
    const url = mesh.url('split', NS);
    const down: number[] = [];
    await mesh.restartMeshpilot(async () => {
      const t = await mesh.pod('sleep').client.run({ url, n: 50 });
      down.push(t.statuses['200'] ?? 0);
    });
    assert.deepEqual(down, [50], 'the sidecars served on their last config without meshpilot');
    for (const pod of ['sleep', 'echo-v1', 'echo-v2', 'mirror']) {
      await waitFor(async () => (await mesh.stats(pod, /^control_plane\.connected_state$/)).get('control_plane.connected_state') === 1, {
        timeoutMs: 60_000,
        description: `${pod} reconnected`,
      });
    }
    const docs = [
      versionSubsets('split'),
      istio('VirtualService', 'split', {
        hosts: [host('split')],
        http: [{ route: [{ destination: { host: host('split'), subset: 'v2' } }] }],
      }),
    ];
    const ms = await timeTo(
      () => mesh.apply('split.yaml', docs),
      url,
      (by) => by['echo-v2'] === 10,
    );
    c.diagnostic(`after the restart, file write → traffic on v2: ${ms} ms`);
    await mesh.apply('split.yaml', undefined);
  });
});
