/**
 * `meshctl kube-inject` and the /inject webhook are one injector: the same Pod through both gives
 * the same injected pod (the webhook's JSON Patch applied to the original vs kube-inject's output).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { defaultMeshConfig, injectionHandler, injectorSnapshot } from '../inject/index.js';
import type { JsonPatchOp } from '../util/json-patch.js';
import { run } from './test-io.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** RFC 6902 add/replace/remove on a copy (what the API server does with the webhook's patch). */
function applyPatch(doc: Json, ops: readonly JsonPatchOp[]): Json {
  const root = structuredClone(doc);
  for (const op of ops) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = parts.pop();
    assert.ok(last !== undefined, op.path);
    let parent = root as Record<string, Json> | Json[];
    for (const p of parts) parent = (Array.isArray(parent) ? parent[Number(p)] : parent[p]) as Record<string, Json> | Json[];
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      if (op.op === 'add') parent.splice(i, 0, op.value as Json);
      else if (op.op === 'replace') parent[i] = op.value as Json;
      else parent.splice(i, 1);
    } else if (op.op === 'remove') delete parent[last];
    else parent[last] = op.value as Json;
  }
  return root;
}

const POD = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'reviews-v1-abc',
    namespace: 'shop',
    labels: { app: 'reviews', version: 'v1' },
    annotations: { 'traffic.sidecar.istio.io/excludeOutboundPorts': '9000' },
  },
  spec: { serviceAccountName: 'reviews', containers: [{ name: 'reviews', image: 'example/reviews:1', ports: [{ containerPort: 9080 }] }] },
};

test('the same Pod through the /inject webhook and through meshctl kube-inject comes out the same', async () => {
  const handler = injectionHandler({
    injector: () => injectorSnapshot(undefined, 'builtin', {}),
    meshConfig: defaultMeshConfig,
    nativeSidecars: () => true,
  });
  const res = await handler({
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace: 'shop',
    operation: 'CREATE',
    object: POD,
  });
  assert.equal(res.allowed, true, JSON.stringify(res.status));
  assert.ok(res.patch, 'the webhook patched the pod');
  const viaWebhook = applyPatch(POD as unknown as Json, JSON.parse(Buffer.from(res.patch, 'base64').toString('utf8')) as JsonPatchOp[]);

  const cli = await run(['kube-inject', '-f', '-'], JSON.stringify(POD));
  assert.equal(cli.code, 0, cli.stderr);
  const [viaCli] = parseAllDocuments(cli.stdout).map((d) => d.toJS() as Json);
  assert.deepEqual(viaCli, viaWebhook);
});
