/**
 * The incremental ambient index must equal a fresh build: a seeded random walk of changes (pods
 * added, relabelled, made unready, deleted; Services and ServiceEntries with selectors added,
 * changed, deleted; WorkloadEntries; namespace labels; a waypoint Gateway) and after every step the
 * index derived from the previous one has the same names and the same encoded Addresses as one
 * built from nothing. AMBIENT_PROPERTY_SEED replays a run.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toBinary } from '@bufbuild/protobuf';
import { MemorySource } from '../../config/sources/memory-source.js';
import { ConfigStore } from '../../config/store.js';
import { AddressSchema } from '../../gen/workloadapi/workload_pb.js';
import type { AmbientEndpointSlice, AmbientKubeService, AmbientKubeState, AmbientPod } from '../../registry/ambient-model.js';
import { ambientEndpointSlice, ambientPod, ambientService } from '../../registry/kube/ambient-translate.js';
import { AmbientIndex, type AmbientInputs } from './ambient-index.js';

const SEED = Number(process.env.AMBIENT_PROPERTY_SEED ?? 20261206);
const STEPS = 300;
const NAMESPACES = ['a', 'b'];
const APPS = ['web', 'api', 'db'];

/** A small deterministic generator (mulberry32). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('ambient index: incremental equals a fresh build', () => {
  it(`after every step of a random walk (seed ${SEED})`, () => {
    const r = rng(SEED);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
    const store = new ConfigStore();
    const source = new MemorySource();
    void source.start(store);
    let pods = new Map<string, AmbientPod>();
    let services = new Map<string, AmbientKubeService>();
    let namespaces = new Map<string, Readonly<Record<string, string>>>([['a', { 'istio.io/dataplane-mode': 'ambient' }]]);
    let endpointSlices = new Map<string, AmbientEndpointSlice>();
    let previous: AmbientIndex | undefined;
    const inputs = (): AmbientInputs => {
      const kube: AmbientKubeState = { pods, services, namespaces, endpointSlices };
      return {
        config: store.snapshot(),
        kube,
        domain: 'cluster.local',
        trustDomain: 'cluster.local',
        rootNamespace: 'istio-system',
        clusterId: 'Kubernetes',
        network: '',
      };
    };
    const ops = [
      () => {
        const ns = pick(NAMESPACES);
        const name = `s${Math.floor(r() * 3)}-x`;
        endpointSlices = new Map(endpointSlices);
        const slice = ambientEndpointSlice({
          addressType: 'IPv4',
          metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': name.slice(0, 2) } },
          ports: [{ name: 'http', port: 7000 + Math.floor(r() * 3), protocol: 'TCP' }],
          endpoints: [{ addresses: [`10.200.${NAMESPACES.indexOf(ns)}.${Math.floor(r() * 4)}`], conditions: { ready: r() < 0.7 } }],
        });
        if (!slice || r() < 0.25) endpointSlices.delete(`${ns}/${name}`);
        else endpointSlices.set(`${ns}/${name}`, slice);
        return `slice ${ns}/${name}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        const name = `p${Math.floor(r() * 6)}`;
        const p = ambientPod(
          {
            metadata: { name, namespace: ns, labels: { app: pick(APPS), ...(r() < 0.2 ? { 'istio.io/dataplane-mode': 'none' } : {}) } },
            spec: {
              serviceAccountName: 'sa',
              nodeName: 'n1',
              containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8000 + Math.floor(r() * 3) }] }],
            },
            status: {
              phase: 'Running',
              podIP: `10.0.${NAMESPACES.indexOf(ns)}.${name.slice(1)}`,
              conditions: [{ type: 'Ready', status: r() < 0.8 ? 'True' : 'False' }],
            },
          },
          undefined,
        );
        pods = new Map(pods);
        if (p) pods.set(`${ns}/${name}`, p);
        return `pod ${ns}/${name}`;
      },
      () => {
        const keys = [...pods.keys()];
        if (keys.length === 0) return 'no pod to delete';
        const k = pick(keys);
        pods = new Map(pods);
        pods.delete(k);
        return `delete pod ${k}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        const name = `s${Math.floor(r() * 3)}`;
        services = new Map(services);
        if (r() < 0.25) services.delete(`${ns}/${name}`);
        else
          services.set(
            `${ns}/${name}`,
            ambientService({
              metadata: { name, namespace: ns, labels: r() < 0.3 ? { 'istio.io/use-waypoint': 'wp' } : {} },
              spec: {
                clusterIP: `10.96.${NAMESPACES.indexOf(ns)}.${name.slice(1)}`,
                selector: { app: pick(APPS) },
                ports: [{ name: 'http', port: 80, targetPort: r() < 0.5 ? 'http' : 8080 }],
              },
            }),
          );
        return `service ${ns}/${name}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        const name = `we${Math.floor(r() * 3)}`;
        if (r() < 0.25) source.delete({ kind: 'WorkloadEntry', namespace: ns, name });
        else
          source.upsert({
            apiVersion: 'networking.istio.io/v1',
            kind: 'WorkloadEntry',
            metadata: { name, namespace: ns, labels: { 'istio.io/dataplane-mode': 'ambient' } },
            spec: { address: `192.168.${NAMESPACES.indexOf(ns)}.${name.slice(2)}`, labels: { app: pick(APPS) }, ports: { http: 9000 } },
          });
        return `workloadentry ${ns}/${name}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        const name = `se${Math.floor(r() * 2)}`;
        if (r() < 0.25) source.delete({ kind: 'ServiceEntry', namespace: ns, name });
        else
          source.upsert({
            apiVersion: 'networking.istio.io/v1',
            kind: 'ServiceEntry',
            metadata: { name, namespace: ns },
            spec: {
              hosts: [`${name}.${ns}.example`],
              ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
              resolution: 'STATIC',
              ...(r() < 0.5
                ? { workloadSelector: { labels: { app: pick(APPS) } } }
                : { endpoints: [{ address: `172.16.0.${Math.floor(r() * 5)}` }] }),
            },
          });
        return `serviceentry ${ns}/${name}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        namespaces = new Map(namespaces);
        namespaces.set(ns, r() < 0.5 ? { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'wp' } : {});
        return `namespace ${ns}`;
      },
      () => {
        const ns = pick(NAMESPACES);
        if (r() < 0.5) source.delete({ kind: 'KubernetesGateway', namespace: ns, name: 'wp' });
        else
          source.upsert({
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'Gateway',
            metadata: { name: 'wp', namespace: ns, labels: { 'istio.io/waypoint-for': pick(['service', 'workload', 'all']) } },
            spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
          });
        return `waypoint ${ns}/wp`;
      },
    ];
    const policies = (ns: string, labels: Readonly<Record<string, string>>): string[] => (labels.app === 'db' ? [`${ns}/db-only`] : []);
    const encoded = (i: AmbientIndex): string[] =>
      i.addresses().map((a) => `${a.name}=${Buffer.from(toBinary(AddressSchema, a.address)).toString('base64')}`);
    const steps: string[] = [];
    let incrementalSteps = 0;
    for (let step = 0; step < STEPS; step++) {
      steps.push(pick(ops)());
      const incremental = AmbientIndex.build(inputs(), policies, previous);
      const fresh = AmbientIndex.build(inputs(), policies);
      if (!incremental.rebuild.full) incrementalSteps++;
      assert.deepEqual(encoded(incremental), encoded(fresh), `step ${step}: ${steps.slice(-3).join('; ')}`);
      previous = incremental;
    }
    assert.ok(incrementalSteps > STEPS / 2, `most steps incremental (${incrementalSteps} of ${STEPS})`);
  });
});
