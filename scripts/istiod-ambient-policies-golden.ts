/**
 * Captures what the real istiod sends ztunnel for the policies of testdata/ambient-policies: every
 * `istio.security.Authorization` and each workload's `authorization_policies`, the oracle
 * test/scenarios/ambient-policies-parity.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/istiod-ambient-policies-golden.ts
 *
 * A fresh real kube-apiserver (../shared/kube), Istio's CRDs, namespaces istio-system and ns1..ns8
 * (the latter with istio.io/dataplane-mode=ambient), the objects of policies.yaml, and the Pods of
 * PODS (status written by hand: there is no kubelet). The real istiod (../shared/istiod/run-kube,
 * PILOT_ENABLE_AMBIENT=true) starts against it; the script connects as a ztunnel over plaintext
 * Delta ADS, subscribes (wildcard) to Authorization, then Address, and records both.
 * Output: testdata/ambient-policies/istiod.json.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, toJson, type JsonValue } from '@bufbuild/protobuf';
import { parseAllDocuments } from 'yaml';
import { AuthorizationSchema } from '../src/gen/workloadapi/security/authorization_pb.js';
import { AddressSchema } from '../src/gen/workloadapi/workload_pb.js';
import { adminRequest, applyCrds, ISTIO_CRDS_FILE, startKubeCluster } from '../test/support/kube.js';
import { REPO_ROOT } from '../test/support/paths.js';
import { DeltaStream } from '../test/support/raw-delta-client.js';
import { ISTIOD_MODULE, PROXY_ISTIO_VERSION, startIstiodKube } from './istiod-capture.js';

const DIR = join(REPO_ROOT, 'testdata', 'ambient-policies');
const AUTHORIZATION = 'type.googleapis.com/istio.security.Authorization';
const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const NAMESPACES = ['istio-system', 'ns1', 'ns2', 'ns3', 'ns4', 'ns5', 'ns6', 'ns7', 'ns8'];
/** namespace, name, labels, IP: one workload per case of label selection (none, one policy, several, no labels). */
const PODS: readonly (readonly [string, string, Record<string, string>, string])[] = [
  ['ns1', 'pod-a', { app: 'a' }, '10.1.0.1'],
  ['ns1', 'pod-b', { app: 'b' }, '10.1.0.2'],
  ['ns1', 'pod-none', {}, '10.1.0.3'],
  ['ns2', 'pod-a', { app: 'a' }, '10.2.0.1'],
  ['ns2', 'pod-b', { app: 'b' }, '10.2.0.2'],
  ['ns3', 'pod-a', { app: 'a' }, '10.3.0.1'],
  ['ns4', 'pod-a', { app: 'a' }, '10.4.0.1'],
  ['ns4', 'pod-c', { app: 'c' }, '10.4.0.2'],
  ['ns5', 'pod-a', { app: 'a' }, '10.5.0.1'],
  ['ns6', 'pod-a', { app: 'a' }, '10.6.0.1'],
  ['ns7', 'pod-a', { app: 'a' }, '10.7.0.1'],
  ['ns8', 'pod-a', { app: 'a' }, '10.8.0.1'],
];
const PLURAL: Readonly<Record<string, string>> = {
  AuthorizationPolicy: 'authorizationpolicies',
  PeerAuthentication: 'peerauthentications',
};

async function main(): Promise<void> {
  const corpus = readFileSync(join(DIR, 'policies.yaml'), 'utf8');
  const cluster = await startKubeCluster();
  try {
    await applyCrds(cluster.clientNode, cluster.env, ISTIO_CRDS_FILE);
    const send = async (method: string, path: string, body: unknown, want: number): Promise<string> => {
      const r = await adminRequest(cluster.env, method, path, body);
      if (r.status !== want) throw new Error(`${method} ${path}: HTTP ${r.status} ${r.body}`);
      return r.body;
    };
    for (const name of NAMESPACES) {
      const labels = name === 'istio-system' ? {} : { 'istio.io/dataplane-mode': 'ambient' };
      await send('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }, 201);
    }
    for (const doc of parseAllDocuments(corpus)) {
      const o = doc.toJS() as { kind: string; metadata: { namespace: string } };
      await send('POST', `/apis/security.istio.io/v1/namespaces/${o.metadata.namespace}/${PLURAL[o.kind] ?? '?'}`, o, 201);
    }
    for (const [ns, name, labels, ip] of PODS) {
      const metadata = { name, namespace: ns, ...(Object.keys(labels).length > 0 ? { labels } : {}) };
      const spec = { containers: [{ name: 'app', image: 'app' }], nodeName: 'node1' };
      const created = JSON.parse(
        await send('POST', `/api/v1/namespaces/${ns}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata, spec }, 201),
      ) as object;
      const status = { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] };
      await send('PUT', `/api/v1/namespaces/${ns}/pods/${name}/status`, { ...created, status }, 200);
    }
    const istiod = await startIstiodKube(cluster.kubeconfigPath, { PILOT_ENABLE_AMBIENT: 'true' });
    try {
      // The ambient index syncs after /ready; give it a moment before the first (wildcard) answer.
      await new Promise((r) => setTimeout(r, 3000));
      const stream = DeltaStream.open(istiod.grpcAddr, {
        node: {
          id: 'ztunnel~10.9.0.1~ztunnel-x.istio-system~istio-system.svc.cluster.local',
          metadata: { NAMESPACE: 'istio-system', NAME: 'ztunnel-x', CLUSTER_ID: 'Kubernetes', ISTIO_VERSION: PROXY_ISTIO_VERSION },
        },
      });
      stream.subscribe(AUTHORIZATION, []);
      const authz = await stream.next(AUTHORIZATION, 20_000);
      stream.ack(authz.resp);
      stream.subscribe(ADDRESS, []);
      const addresses = await stream.next(ADDRESS, 20_000);
      stream.ack(addresses.resp);
      stream.close();
      const authorizations: Record<string, JsonValue> = {};
      for (const r of [...authz.resp.resources].sort((a, b) => (a.name < b.name ? -1 : 1)))
        authorizations[r.name] = toJson(AuthorizationSchema, fromBinary(AuthorizationSchema, r.resource?.value ?? new Uint8Array()));
      const policiesOf = new Map<string, string[]>();
      for (const r of addresses.resp.resources) {
        const a = fromBinary(AddressSchema, r.resource?.value ?? new Uint8Array());
        if (a.type.case === 'workload')
          policiesOf.set(`${a.type.value.namespace}/${a.type.value.name}`, a.type.value.authorizationPolicies);
      }
      const workloads = PODS.map(([namespace, name, labels]) => {
        const got = policiesOf.get(`${namespace}/${name}`);
        if (!got) throw new Error(`istiod sent no workload for ${namespace}/${name}`);
        return { namespace, name, labels, authorizationPolicies: got };
      });
      const out = { source: { istiod: ISTIOD_MODULE, config: 'policies.yaml' }, authorizations, workloads };
      writeFileSync(join(DIR, 'istiod.json'), `${JSON.stringify(out, null, 2)}\n`);
      console.log(`captured ${Object.keys(authorizations).length} authorizations, ${workloads.length} workloads`);
    } finally {
      await istiod.stop();
    }
  } finally {
    await cluster.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
