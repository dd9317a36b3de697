/**
 * A VM joins the mesh as istiod lets it: meshpilot's agent with the real Envoy, in a network
 * namespace of its own (its own address), connects with ISTIO_META_AUTO_REGISTER_GROUP; meshpilot
 * (file mode: no API server) creates the WorkloadEntry from the WorkloadGroup, and another
 * sidecar's EDS gets the VM's address through a ServiceEntry selecting the group's labels. When
 * the agent stops, the entry stays for the grace period (PILOT_WORKLOAD_ENTRY_GRACE_PERIOD, short
 * here) and is then removed, and the address leaves EDS. With the group's readiness probe, the
 * agent probes the VM's app and its health decides whether the address is served.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { netnsSkipReason } from '../support/cni/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { startVm, type Vm } from '../support/vm-agent.js';
import { waitFor } from '../support/wait.js';
import { decodeResources, endpointAddresses, TYPE } from '../support/xds-resources.js';

const skip = netnsSkipReason() ?? envoySkipReason();
const NS = 'shop';
const GRACE_MS = 3000;
const VM_IP = '10.77.0.5';
const PROBED_VM_IP = '10.77.0.6';

const CONFIG = `
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: vm, namespace: ${NS} }
spec:
  metadata:
    labels: { app: vm }
  template:
    serviceAccount: vm-sa
    ports: { http: 8080 }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: probed, namespace: ${NS} }
spec:
  metadata:
    labels: { app: probed }
  template:
    serviceAccount: vm-sa
  probe:
    periodSeconds: 1
    httpGet: { port: 8080, path: /ready }
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: vm, namespace: ${NS} }
spec:
  hosts: [vm.${NS}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ name: http, number: 8080, protocol: HTTP }]
  workloadSelector: { labels: { app: vm } }
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: probed, namespace: ${NS} }
spec:
  hosts: [probed.${NS}.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ name: http, number: 8080, protocol: HTTP }]
  workloadSelector: { labels: { app: probed } }
`;

/** Another sidecar's view of one cluster's endpoints: every EDS response it gets, acknowledged. */
function observeEndpoints(mp: JwtCaMeshpilot, cluster: string): { current: () => readonly string[]; close: () => void } {
  const stream = AdsStream.open(mp.mp.grpcAddr, {
    node: { id: `sidecar~10.66.0.9~observer-${cluster.length}.${NS}~${NS}.svc.cluster.local`, metadata: { NAMESPACE: NS } },
  });
  let current: readonly string[] = [];
  stream.onResponse((r) => {
    if (r.resp.typeUrl !== TYPE.EDS) return;
    for (const cla of decodeResources(r.resp, ClusterLoadAssignmentSchema))
      if (cla.clusterName === cluster) current = endpointAddresses(cla);
    stream.ack(r.resp);
  });
  stream.subscribe(TYPE.EDS, [cluster]);
  return { current: () => current, close: () => stream.close() };
}

/** The VM's Envoy config_dump, read from its admin port inside the VM's namespace. */
function envoyConfigDump(vm: Vm): string {
  const script = "fetch('http://127.0.0.1:15000/config_dump').then((r) => r.text()).then((t) => process.stdout.write(t), () => {})";
  return vm.ns.run(process.execPath, '-e', script);
}

/** The WorkloadEntry as /debug/configz shows it. */
async function configzEntry(mp: JwtCaMeshpilot, name: string): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`http://${mp.mp.httpAddr}/debug/configz`);
  const body = (await res.json()) as { configs: { kind: string; metadata: { name: string; namespace: string } }[] };
  return body.configs.find((c) => c.kind === 'WorkloadEntry' && c.metadata.name === name && c.metadata.namespace === NS) as
    Record<string, unknown> | undefined;
}

describe('a VM auto-registers through its WorkloadGroup', { skip }, () => {
  let dir: TempDir | undefined;
  let mp: JwtCaMeshpilot | undefined;
  const vms: Vm[] = [];
  const closers: (() => void)[] = [];

  before(async () => {
    dir = tempDir('mp-vm-');
    const configDir = path.join(dir.path, 'config');
    mkdirSync(configDir);
    writeFileSync(path.join(configDir, 'vm.yaml'), CONFIG);
    mp = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'), {
      env: { PILOT_WORKLOAD_ENTRY_GRACE_PERIOD: `${GRACE_MS}ms` },
    });
  });

  after(async () => {
    for (const c of closers) c();
    for (const vm of vms) await vm.remove();
    await mp?.mp.stop();
    await dir?.remove();
  });

  it('its address reaches another sidecar while it is connected, and leaves a grace period after its agent stops', async () => {
    assert.ok(mp && dir);
    const cp = mp;
    const observer = observeEndpoints(cp, `outbound|8080||vm.${NS}.svc.cluster.local`);
    closers.push(observer.close);
    const vm = await startVm(cp, {
      name: 'vm-1',
      namespace: NS,
      serviceAccount: 'vm-sa',
      ip: VM_IP,
      dir: path.join(dir.path, 'vm-1'),
      env: { ISTIO_META_AUTO_REGISTER_GROUP: 'vm' },
    });
    vms.push(vm);
    await vm.startAgent();
    await waitFor(() => observer.current().includes(`${VM_IP}:8080`), {
      description: 'the VM in the observer EDS',
      timeoutMs: 30_000,
    }).catch((e: Error) => assert.fail(e.message + vm.tail()));
    // The VM is a mesh member: its own Envoy got the inbound config of the service that selects it.
    await waitFor(() => envoyConfigDump(vm).includes('inbound|8080||'), {
      description: "the VM's Envoy with its inbound cluster",
      timeoutMs: 20_000,
    }).catch((e: Error) => assert.fail(e.message + vm.tail()));
    const entry = await configzEntry(cp, `vm-${VM_IP}`);
    assert.ok(entry, 'the entry is named <group>-<ip>');
    const annotations = (entry.metadata as { annotations: Record<string, string> }).annotations;
    assert.equal(annotations['istio.io/autoRegistrationGroup'], 'vm');
    assert.ok(annotations['istio.io/connectedAt']);
    assert.ok(annotations['istio.io/workloadController']);
    assert.equal(annotations['istio.io/disconnectedAt'], undefined);

    const since = cp.mp.mark();
    await vm.stopAgent();
    await cp.mp.waitForLog((l) => l.raw.includes('WorkloadEntry marked disconnected'), {
      since,
      timeoutMs: 20_000,
      description: 'the entry marked disconnected',
    });
    const disconnected = await configzEntry(cp, `vm-${VM_IP}`);
    assert.ok(disconnected, 'kept during the grace period');
    assert.ok((disconnected.metadata as { annotations: Record<string, string> }).annotations['istio.io/disconnectedAt']);
    assert.ok(observer.current().includes(`${VM_IP}:8080`), 'still served during the grace period');
    await cp.mp.waitForLog((l) => l.raw.includes('cleaned up auto-registered WorkloadEntry'), {
      since,
      timeoutMs: GRACE_MS + 20_000,
      description: 'the entry removed after the grace period',
    });
    await waitFor(() => !observer.current().includes(`${VM_IP}:8080`), { description: 'the VM gone from EDS', timeoutMs: 10_000 });
    assert.equal(await configzEntry(cp, `vm-${VM_IP}`), undefined);
    const metrics = await (await fetch(`http://${cp.mp.monitoringAddr}/metrics`)).text();
    assert.match(metrics, /^auto_registration_success_total 1$/m);
    assert.match(metrics, /^auto_registration_unregister_total 1$/m);
    assert.match(metrics, /^auto_registration_deletes_total 1$/m);
  });

  it("the group's readiness probe decides whether the VM's address is served", async () => {
    assert.ok(mp && dir);
    const cp = mp;
    const observer = observeEndpoints(cp, `outbound|8080||probed.${NS}.svc.cluster.local`);
    closers.push(observer.close);
    // The probe as `meshctl x workload entry configure` puts it in mesh.yaml: ProxyConfig readinessProbe.
    const vm = await startVm(cp, {
      name: 'vm-2',
      namespace: NS,
      serviceAccount: 'vm-sa',
      ip: PROBED_VM_IP,
      dir: path.join(dir.path, 'vm-2'),
      env: {
        ISTIO_META_AUTO_REGISTER_GROUP: 'probed',
        PROXY_CONFIG: JSON.stringify({ readinessProbe: { periodSeconds: 1, httpGet: { port: 8080, path: '/ready' } } }),
      },
    });
    vms.push(vm);
    await vm.startAgent();
    const name = `probed-${PROBED_VM_IP}`;
    await waitFor(
      async () => {
        const e = await configzEntry(cp, name);
        return (
          (e?.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions?.find((c) => c.type === 'Healthy')
            ?.status === 'False'
        );
      },
      { description: 'Healthy=False while no app answers', timeoutMs: 30_000 },
    ).catch((e: Error) => assert.fail(e.message + vm.tail()));
    assert.deepEqual(observer.current(), [], 'an unhealthy entry is not served');

    const app = vm.spawnInVm(process.execPath, [
      '-e',
      `require('node:http').createServer((q, s) => s.end('ok')).listen(8080, '${PROBED_VM_IP}')`,
    ]);
    await waitFor(() => observer.current().includes(`${PROBED_VM_IP}:8080`), {
      description: 'the VM served once its app answers the probe',
      timeoutMs: 30_000,
    }).catch((e: Error) => assert.fail(e.message + vm.tail()));
    await app.kill();
    await waitFor(() => !observer.current().includes(`${PROBED_VM_IP}:8080`), {
      description: 'the VM no longer served once the probe fails',
      timeoutMs: 30_000,
    }).catch((e: Error) => assert.fail(e.message + vm.tail()));
    const e = await configzEntry(cp, name);
    const healthy = (e?.status as { conditions: { type: string; status: string; message?: string }[] }).conditions.find(
      (c) => c.type === 'Healthy',
    );
    assert.equal(healthy?.status, 'False');
    assert.match(healthy?.message ?? '', /HTTP probe of 10\.77\.0\.6:8080 failed/);
  });
});
