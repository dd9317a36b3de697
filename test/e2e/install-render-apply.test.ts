/**
 * Every object `meshctl manifest generate --set profile=demo` renders is accepted by a REAL
 * kube-apiserver with server-side apply (not a dry run): CRDs first, waited on until Established,
 * then everything else in the rendered order; each object is read back afterwards. Resource paths
 * come from the server's discovery, so a kind or apiVersion the server does not serve fails here.
 * (The full installer — ordering, waiting, pruning — is src/install/apply.ts and its tests.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { renderInstall, type RenderedObject } from '../../src/install/render.js';
import { adminRequest, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { waitFor } from '../support/wait.js';

const FIELD_MANAGER = 'meshctl-render-test';

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/** The object's REST path, from the server's discovery document of its group/version. */
async function objectPath(
  env: Readonly<Record<string, string>>,
  discovery: Map<string, ApiResource[]>,
  o: RenderedObject['object'],
): Promise<string> {
  const base = o.apiVersion === 'v1' ? '/api/v1' : `/apis/${o.apiVersion}`;
  let resources = discovery.get(base);
  if (!resources) {
    const res = await adminRequest(env, 'GET', base);
    assert.equal(res.status, 200, `discovery ${base}: ${res.body}`);
    resources = (JSON.parse(res.body) as { resources: ApiResource[] }).resources.filter((r) => !r.name.includes('/'));
    discovery.set(base, resources);
  }
  const r = resources.find((x) => x.kind === o.kind);
  assert.ok(r, `the API server serves no ${o.kind} in ${o.apiVersion}`);
  const ns = r.namespaced ? `/namespaces/${o.metadata.namespace ?? 'default'}` : '';
  return `${base}${ns}/${r.name}/${o.metadata.name}`;
}

describe('demo profile objects on a real API server (server-side apply)', { skip: kubeSkipReason() ?? false }, () => {
  let cluster: KubeCluster;
  before(
    async () => {
      cluster = await startKubeCluster();
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );
  after(() => cluster?.stop());

  it('applies every rendered object, CRDs established first, and reads each back', { timeout: 120_000 }, async () => {
    const { objects } = await renderInstall({ profile: 'demo', sets: [], valuesFiles: [] });
    assert.ok(objects.length > 30, `${objects.length} objects`);
    const env = cluster.env;
    const created = await adminRequest(env, 'POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'istio-system' },
    });
    assert.ok(created.status === 201 || created.status === 409, created.body);

    const discovery = new Map<string, ApiResource[]>();
    const apply = async (o: RenderedObject): Promise<void> => {
      const path = await objectPath(env, discovery, o.object);
      const res = await adminRequest(
        env,
        'PATCH',
        `${path}?fieldManager=${FIELD_MANAGER}&force=true`,
        o.object,
        'application/apply-patch+yaml',
      );
      assert.ok(
        res.status === 200 || res.status === 201,
        `${o.template}: ${o.object.kind} ${o.object.metadata.name}: HTTP ${res.status} ${res.body}`,
      );
    };
    const crds = objects.filter((o) => o.object.kind === 'CustomResourceDefinition');
    const rest = objects.filter((o) => o.object.kind !== 'CustomResourceDefinition');
    assert.equal(crds.length, 15, 'the 15 Istio CRDs of istio/api');
    await Promise.all(crds.map(apply));
    await waitFor(
      async () => {
        const res = await adminRequest(env, 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
        const items = (
          JSON.parse(res.body) as {
            items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
          }
        ).items;
        const established = new Set(
          items
            .filter((c) => c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'))
            .map((c) => c.metadata.name),
        );
        return crds.every((c) => established.has(c.object.metadata.name));
      },
      { timeoutMs: 60_000, intervalMs: 100, description: 'the CRDs Established' },
    );
    for (const o of rest) await apply(o);

    for (const o of objects) {
      const res = await adminRequest(env, 'GET', await objectPath(env, discovery, o.object));
      assert.equal(res.status, 200, `${o.object.kind} ${o.object.metadata.name} read back: ${res.body}`);
      const managed =
        (JSON.parse(res.body) as { metadata: { managedFields?: Array<{ manager: string; operation: string }> } }).metadata.managedFields ??
        [];
      assert.ok(
        managed.some((m) => m.manager === FIELD_MANAGER && m.operation === 'Apply'),
        `${o.object.kind} ${o.object.metadata.name} applied by ${FIELD_MANAGER}`,
      );
    }
  });
});
