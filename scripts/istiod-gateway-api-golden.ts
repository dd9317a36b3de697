/**
 * Captures the real istiod's gateway config and Gateway API status for every scenario under
 * testdata/scenarios/gateway-api, the oracle test/scenarios/gateway-api-parity.test.ts holds
 * meshpilot to.
 *
 *   npx tsx scripts/istiod-gateway-api-golden.ts [scenario ...]
 *
 * Per scenario: a fresh real kube-apiserver (../shared/kube/start-apiserver), the vendored
 * Gateway API CRDs (manifests/crds/gateway-api), namespaces istio-system/gw/other, the Services of
 * services.yaml with an EndpointSlice each, the gateway's Service `gw-istio` and its Pod at
 * 10.2.0.1 (what istiod's automated deployment would create; the deployment controller is off,
 * PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER=false, since nothing would run its Deployment), then
 * the scenario's objects in namespace/name order. The real istiod (../shared/istiod/run-kube)
 * starts against it; once it has written status on the Gateway, the script connects as the
 * gateway proxy (router node of the pod, over plaintext ADS), records LDS/RDS/CDS, and reads back
 * the status istiod wrote on the GatewayClass, the Gateway and every route.
 * Output: testdata/scenarios/gateway-api/<scenario>/istiod.json.
 * Env: ISTIOD_RUN_KUBE overrides the run-kube script; other env (ISTIOD_BIN …) passes through.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import {
  GATEWAY_API_DIR,
  GATEWAY_PROXY,
  kubeServiceObjects,
  scenarioDigest,
  scenarioNames,
  scenarioObjects,
  type Obj,
} from '../test/scenarios/gateway-api-fixture.js';
import { adminRequest, applyCrds, startKubeCluster, type KubeCluster } from '../test/support/kube.js';
import { REPO_ROOT } from '../test/support/paths.js';
import { waitFor } from '../test/support/wait.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';
import { byName, capture, ISTIOD_MODULE, PROXY_ISTIO_VERSION, runScenarios, startIstiodKube, toOpaqueJson } from './istiod-capture.js';

const CRD_DIR = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');

const PLURAL: Readonly<Record<string, string>> = {
  Gateway: 'gateways',
  GatewayClass: 'gatewayclasses',
  HTTPRoute: 'httproutes',
  GRPCRoute: 'grpcroutes',
  TCPRoute: 'tcproutes',
  TLSRoute: 'tlsroutes',
  ReferenceGrant: 'referencegrants',
  Service: 'services',
  Secret: 'secrets',
  Pod: 'pods',
  EndpointSlice: 'endpointslices',
};

/** The REST path of an object's collection (or of the object itself with `name`). */
function path(o: Pick<Obj, 'apiVersion' | 'kind'>, namespace: string | undefined, name?: string): string {
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = namespace ? `/namespaces/${namespace}` : '';
  return `${base}${ns}/${PLURAL[o.kind] ?? `${o.kind.toLowerCase()}s`}${name ? `/${name}` : ''}`;
}

async function create(cluster: KubeCluster, o: Obj): Promise<void> {
  const res = await adminRequest(cluster.env, 'POST', path(o, o.metadata.namespace), o);
  if (res.status !== 201)
    throw new Error(`creating ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}: HTTP ${res.status} ${res.body}`);
}

async function get(
  cluster: KubeCluster,
  o: Pick<Obj, 'apiVersion' | 'kind'>,
  namespace: string | undefined,
  name: string,
): Promise<Record<string, unknown>> {
  const res = await adminRequest(cluster.env, 'GET', path(o, namespace, name));
  if (res.status !== 200) throw new Error(`reading ${o.kind} ${namespace ?? ''}/${name}: HTTP ${res.status} ${res.body}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

/** Conditions without what changes run to run (times, generations). */
function normaliseConditions(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normaliseConditions);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (k !== 'lastTransitionTime' && k !== 'observedGeneration') out[k] = normaliseConditions(x);
  return out;
}

const ROUTE_KINDS = new Set(['HTTPRoute', 'GRPCRoute', 'TCPRoute', 'TLSRoute']);

async function runScenario(name: string): Promise<void> {
  const started = Date.now();
  const cluster = await startKubeCluster();
  try {
    for (const ns of ['istio-system', 'gw', 'other'])
      await create(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as Obj);
    for (const f of readdirSync(CRD_DIR)
      .filter((n) => n.endsWith('.yaml'))
      .sort())
      await applyCrds(cluster.clientNode, cluster.env, join(CRD_DIR, f));
    const services = kubeServiceObjects(name);
    const slices = services.filter((o) => o.kind === 'EndpointSlice');
    for (const o of services.filter((x) => x.kind !== 'EndpointSlice')) await create(cluster, o);
    // The gateway pod (no kubelet: the status is written by hand), then the slices pointing at it.
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'gw-istio-0', namespace: 'gw', labels: GATEWAY_PROXY.labels },
      spec: { containers: [{ name: 'istio-proxy', image: 'istio/proxyv2' }] },
    } as unknown as Obj;
    await create(cluster, pod);
    const created = await get(cluster, pod, 'gw', 'gw-istio-0');
    const podStatus = {
      ...created,
      status: { phase: 'Running', podIP: '10.2.0.1', podIPs: [{ ip: '10.2.0.1' }], conditions: [{ type: 'Ready', status: 'True' }] },
    };
    const res = await adminRequest(cluster.env, 'PUT', `${path(pod, 'gw', 'gw-istio-0')}/status`, podStatus);
    if (res.status !== 200) throw new Error(`pod status: ${res.status} ${res.body}`);
    for (const s of slices) await create(cluster, s);
    const objects = scenarioObjects(name).sort((a, b) =>
      `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`),
    );
    for (const o of objects) await create(cluster, o);

    // The deployment controller is off: nothing would run its Deployment; the script stands in for it.
    const istiod = await startIstiodKube(cluster.kubeconfigPath, { PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER: 'false' });
    try {
      const gw = objects.find((o) => o.kind === 'Gateway')!;
      const routes = objects.filter((o) => ROUTE_KINDS.has(o.kind));
      // Status is the last thing istiod's controllers write: once the Gateway and every route have theirs, the config is in.
      await waitFor(
        async () => {
          const g = await get(cluster, gw, 'gw', gw.metadata.name);
          const conds = (g.status as { conditions?: { type: string; reason: string }[] } | undefined)?.conditions ?? [];
          if (!conds.some((c) => c.type === 'Programmed' && c.reason !== 'Pending')) return false;
          for (const r of routes) {
            const got = await get(cluster, r, r.metadata.namespace, r.metadata.name);
            if (
              ((got.status as { parents?: unknown[] } | undefined)?.parents ?? []).length === 0 &&
              (r.spec?.parentRefs as unknown[] | undefined)?.length
            )
              return false;
          }
          return true;
        },
        { timeoutMs: 60_000, intervalMs: 250, description: `istiod status on the objects of ${name}` },
      );
      await new Promise((r) => setTimeout(r, 1500));
      const { byType } = await capture(istiod.grpcAddr, GATEWAY_PROXY);
      const base = xdsJsonRegistry();
      const opaque = new Set<string>();
      const section = (t: keyof typeof SCHEMA_BY_TYPE): JsonValue[] => {
        const schema = SCHEMA_BY_TYPE[t];
        return (byType.get(t)?.resources ?? [])
          .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, base, opaque))
          .sort(byName);
      };
      const status: Record<string, unknown> = {};
      const gwc = await get(cluster, { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass' }, undefined, 'istio');
      status['GatewayClass//istio'] = normaliseConditions(gwc.status);
      for (const o of [gw, ...routes])
        status[`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`] = normaliseConditions(
          (await get(cluster, o, o.metadata.namespace, o.metadata.name)).status,
        );
      const doc = {
        source: { istiod: ISTIOD_MODULE, node: GATEWAY_PROXY.id, ISTIO_VERSION: PROXY_ISTIO_VERSION, configSha256: scenarioDigest(name) },
        listeners: section(TYPE.LDS),
        routes: section(TYPE.RDS),
        clusters: section(TYPE.CDS),
        endpoints: [],
        status,
      };
      writeFileSync(join(GATEWAY_API_DIR, name, 'istiod.json'), `${JSON.stringify(doc, undefined, 2)}\n`);
      const warnings = istiod.log.filter(
        (l) => /\terror\t/.test(l) && !/leader|lease|istio-ca|ConfigMap|webhook|injector|mutatingwebhook/i.test(l),
      );
      console.log(
        `${name}: ${doc.listeners.length} listeners, ${doc.routes.length} routes, ${doc.clusters.length} clusters, ${Object.keys(status).length} statuses (${Date.now() - started} ms)${warnings.length ? `\n  istiod errors:\n  ${warnings.slice(0, 5).join('\n  ')}` : ''}`,
      );
    } finally {
      await istiod.stop();
    }
  } finally {
    await cluster.stop();
  }
}

runScenarios(scenarioNames(), runScenario);
