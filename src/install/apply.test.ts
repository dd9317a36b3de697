/**
 * The apply engine against a real kube-apiserver (test/support/kube.ts): install, upgrade with its
 * report checked against the server's objects, validation that applies nothing, waits and order,
 * uninstall with and without --purge, verify-install. Hand-built objects stand in for the charts
 * (the e2e test/e2e/install.test.ts renders the real ones). Every test installs its own revision:
 * the inventory is cluster-wide per revision, as istioctl's is.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { adminRequest, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../../test/support/kube.js';
import { waitFor } from '../../test/support/wait.js';
import {
  applyInstall,
  InstallApplyError,
  InstallValidationError,
  uninstall,
  uninstallPlan,
  verifyInstall,
  type ApplyOptions,
  type ObjectChange,
} from './apply.js';
import { COMPONENT_LABEL, MANAGED_BY_LABEL, OWNING_RESOURCE_LABEL } from './inventory.js';
import { kubeClient, type KubeClient } from '../kube/index.js';
import type { InstallObject } from './objects.js';
import { Progress } from './progress.js';
import { REVISION_LABEL } from '../config/constants.js';
import type { KubeJsonObject } from '../config/sources/kube/kube-object.js';

const skip = kubeSkipReason();
let cluster: KubeCluster;
let rest: KubeClient;

interface Values {
  replicas?: number;
  mesh?: string;
  pdb?: boolean;
}

const GROUP = 'install-test.meshpilot.io';

/** What a chart would render for one install: `sfx` keeps cluster-scoped names apart between tests. */
function rendered(ns: string, sfx: string, v: Values = {}): InstallObject[] {
  const base = (template: string, object: InstallObject['object']): InstallObject => ({
    chart: 'base',
    template: `base/templates/${template}`,
    object,
  });
  const pilot = (template: string, object: InstallObject['object']): InstallObject => ({
    chart: 'meshpilot',
    template: `meshpilot/templates/${template}`,
    object,
  });
  const labels = { app: 'istiod' };
  const objects: InstallObject[] = [
    // Given out of order on purpose: the webhook and the CR first, the CRD late.
    base('validatingwebhookconfiguration.yaml', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: `istio-validator-${sfx}` },
      webhooks: [
        {
          name: 'rev.validation.istio.io',
          clientConfig: { url: 'https://127.0.0.1:9/validate' },
          rules: [{ operations: ['CREATE'], apiGroups: [GROUP], apiVersions: ['*'], resources: ['*'] }],
          namespaceSelector: { matchLabels: { 'never-matches': sfx } },
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    }),
    pilot('widget.yaml', {
      apiVersion: `${GROUP}/v1`,
      kind: `Widget${sfx}`,
      metadata: { name: 'default', namespace: ns },
      spec: { size: 3 },
    }),
    pilot('deployment.yaml', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'istiod', namespace: ns, labels },
      spec: {
        replicas: v.replicas ?? 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { serviceAccountName: 'istiod', containers: [{ name: 'discovery', image: 'meshpilot:test' }] },
        },
      },
    }),
    pilot('service.yaml', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'istiod', namespace: ns },
      spec: { selector: labels, ports: [{ name: 'grpc-xds', port: 15010 }] },
    }),
    pilot('configmap.yaml', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: ns },
      data: { mesh: v.mesh ?? 'trustDomain: cluster.local\n' },
    }),
    base('serviceaccount.yaml', { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'istiod', namespace: ns } }),
    base('clusterrole.yaml', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `istiod-${sfx}` },
      rules: [{ apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] }],
    }),
    base('crds.yaml', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widget${sfx}s.${GROUP}` },
      spec: {
        group: GROUP,
        scope: 'Namespaced',
        names: { kind: `Widget${sfx}`, plural: `widget${sfx}s`, singular: `widget${sfx}`, listKind: `Widget${sfx}List` },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { size: { 'x-kubernetes-int-or-string': true } } } },
              },
            },
          },
        ],
      },
    }),
  ];
  if (v.pdb !== false) {
    objects.push(
      pilot('poddisruptionbudget.yaml', {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'istiod', namespace: ns },
        spec: { minAvailable: 1, selector: { matchLabels: labels } },
      }),
    );
  }
  return objects;
}

function options(ns: string, revision: string, extra: Partial<ApplyOptions> = {}): ApplyOptions {
  return { systemNamespace: ns, revision, wait: false, readinessTimeoutMs: 10_000, pollIntervalMs: 50, ...extra };
}

const fresh = (): string => randomBytes(3).toString('hex');

/** The server's object for a rendered one (undefined when absent). */
async function serverObject(o: InstallObject, ns: string): Promise<KubeJsonObject | undefined> {
  const info = await rest.resolve(o.object.apiVersion, o.object.kind);
  if (!info) return undefined;
  const path = `/${o.object.apiVersion.includes('/') ? 'apis' : 'api'}/${o.object.apiVersion}${info.namespaced ? `/namespaces/${ns}` : ''}/${info.resource}/${o.object.metadata.name}`;
  return rest.getOrUndefined(path);
}

const byName = (changes: readonly ObjectChange[]): Map<string, ObjectChange> =>
  new Map(changes.map((c) => [`${c.ref.kind}/${c.ref.name}`, c]));

/** Marks a Deployment rolled out, as the deployment controller would (this server runs none). */
async function markAvailable(ns: string, name: string): Promise<void> {
  const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
  const dep = JSON.parse((await adminRequest(cluster.env, 'GET', path)).body) as {
    metadata: { generation: number; resourceVersion: string };
    spec: { replicas: number };
  };
  const n = dep.spec.replicas;
  const res = await adminRequest(cluster.env, 'PUT', `${path}/status`, {
    ...dep,
    status: { observedGeneration: dep.metadata.generation, replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n },
  });
  assert.equal(res.status, 200, res.body);
}

describe('install apply engine on a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      rest = kubeClient(cluster.kubeConfig);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );
  after(() => cluster?.stop());

  it('installs in dependency order onto a namespace that does not exist yet; every object carries the inventory labels', async () => {
    const sfx = fresh();
    const ns = `istio-${sfx}`;
    const objects = rendered(ns, sfx);
    let progress = '';
    const changes = await applyInstall(
      rest,
      objects,
      options(ns, `r${sfx}`, { progress: new Progress({ write: (s: string) => (progress += s) }) }),
    );
    assert.deepEqual(
      changes.map((c) => `${c.ref.kind} ${c.action}`),
      [
        'CustomResourceDefinition created',
        'ServiceAccount created',
        'ClusterRole created',
        'ConfigMap created',
        `Widget${sfx} created`,
        'Service created',
        'PodDisruptionBudget created',
        'Deployment created',
        'ValidatingWebhookConfiguration created',
      ],
    );
    for (const o of objects) {
      const live = await serverObject(o, ns);
      assert.ok(live, `${o.object.kind} ${o.object.metadata.name} exists`);
      const labels = live.metadata?.labels ?? {};
      assert.equal(labels[MANAGED_BY_LABEL], 'meshctl');
      assert.equal(labels[REVISION_LABEL], `r${sfx}`);
      assert.equal(labels[OWNING_RESOURCE_LABEL], `installed-state-r${sfx}`);
      assert.equal(labels[COMPONENT_LABEL], o.chart === 'base' ? 'Base' : 'Pilot');
    }
    // The CRD went in as rendered (a typed client would have dropped x-kubernetes-int-or-string).
    const crd = await serverObject(
      objects.find((o) => o.object.kind === 'CustomResourceDefinition')!,
      ns,
    );
    assert.match(JSON.stringify(crd?.spec), /x-kubernetes-int-or-string/);
    // Istio core's webhook configuration waits for the Istiod Deployment, so core completes last.
    // Plain lines (no terminal): waits, when there were any, then one line per component.
    const lines = progress.split('\n').filter((l) => l !== '');
    assert.deepEqual(
      lines.filter((l) => !l.startsWith('- Waiting for ')),
      ['✔ Istiod installed', '✔ Istio core installed'],
    );
  });

  it('upgrade changes exactly what the report says: a changed field, a pruned PDB, the rest untouched', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('upgrade');
    const first = rendered(ns, sfx);
    await applyInstall(rest, first, options(ns, `r${sfx}`));
    const versions = new Map<string, string>();
    for (const o of first)
      versions.set(`${o.object.kind}/${o.object.metadata.name}`, (await serverObject(o, ns))?.metadata?.resourceVersion ?? '');

    const second = rendered(ns, sfx, { replicas: 2, mesh: 'trustDomain: example.org\n', pdb: false });
    const changes = byName(await applyInstall(rest, second, options(ns, `r${sfx}`)));
    assert.deepEqual(changes.get('Deployment/istiod'), {
      ref: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'istiod', namespace: ns },
      action: 'configured',
      fields: ['spec.replicas'],
    });
    assert.deepEqual(changes.get('ConfigMap/istio')?.fields, ['data.mesh']);
    assert.equal(changes.get('PodDisruptionBudget/istiod')?.action, 'pruned');
    assert.equal(changes.size, first.length);

    for (const o of first) {
      const key = `${o.object.kind}/${o.object.metadata.name}`;
      const live = await serverObject(o, ns);
      const change = changes.get(key);
      if (change?.action === 'pruned') assert.equal(live, undefined, `${key} was deleted`);
      else if (change?.action === 'unchanged') assert.equal(live?.metadata?.resourceVersion, versions.get(key), `${key} untouched`);
      else {
        assert.equal(change?.action, 'configured', key);
        assert.notEqual(live?.metadata?.resourceVersion, versions.get(key), `${key} written`);
      }
    }
    assert.equal(
      (
        (
          await serverObject(
            second.find((o) => o.object.kind === 'Deployment')!,
            ns,
          )
        )?.spec as { replicas: number }
      ).replicas,
      2,
    );
  });

  it('bad objects apply nothing: every problem named by kind, namespace and name', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('bad');
    const objects = rendered(ns, sfx, { replicas: -1 });
    objects.push({
      chart: 'meshpilot',
      template: 'meshpilot/templates/typo.yaml',
      object: { apiVersion: 'v1', kind: 'ConfigMapp', metadata: { name: 'x', namespace: ns } },
    });
    await assert.rejects(applyInstall(rest, objects, options(ns, `r${sfx}`)), (err: unknown) => {
      assert.ok(err instanceof InstallValidationError);
      assert.match(err.message, /meshpilot\/templates\/typo\.yaml: ConfigMapp x: the API server serves no kind ConfigMapp in v1/);
      return true;
    });
    const valid = rendered(ns, sfx, { replicas: -1 });
    await assert.rejects(applyInstall(rest, valid, options(ns, `r${sfx}`)), (err: unknown) => {
      assert.ok(err instanceof InstallValidationError);
      assert.match(err.message, new RegExp(`Deployment ${ns}/istiod: .*spec\\.replicas: Invalid value: -1`));
      return true;
    });
    for (const o of valid) assert.equal(await serverObject(o, ns), undefined, `${o.object.kind} ${o.object.metadata.name} not created`);
  });

  it('an object the API server refuses mid-apply stops the install with its error, naming the object; later steps are not applied', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('midway');
    const objects = rendered(ns, sfx);
    // Its namespace does not exist, so the dry-run cannot check it; the apply is refused.
    objects.push({
      chart: 'meshpilot',
      template: 'meshpilot/templates/elsewhere.yaml',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'elsewhere', namespace: `nowhere-${sfx}` } },
    });
    await assert.rejects(applyInstall(rest, objects, options(ns, `r${sfx}`)), (err: unknown) => {
      assert.ok(err instanceof InstallApplyError);
      assert.equal(err.message, `ConfigMap nowhere-${sfx}/elsewhere: namespaces "nowhere-${sfx}" not found`);
      assert.deepEqual(
        err.changes.map((c) => c.ref.kind),
        ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ConfigMap'],
      );
      return true;
    });
    for (const kind of ['Deployment', 'Service', 'ValidatingWebhookConfiguration'])
      assert.equal(
        await serverObject(
          objects.find((o) => o.object.kind === kind)!,
          ns,
        ),
        undefined,
        `${kind} not applied`,
      );
  });

  it('with --wait the webhooks go in only after the Deployment is available; a timeout names what was not ready', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('wait');
    const objects = rendered(ns, sfx);
    const webhook = objects.find((o) => o.object.kind === 'ValidatingWebhookConfiguration')!;
    await assert.rejects(applyInstall(rest, objects, options(ns, `r${sfx}`, { wait: true, readinessTimeoutMs: 300 })), (err: unknown) => {
      assert.ok(err instanceof InstallApplyError);
      assert.match(err.message, new RegExp(`timed out after 300ms waiting for Deployment ${ns}/istiod: .*--wait=false skips this wait`));
      return true;
    });
    assert.equal(await serverObject(webhook, ns), undefined, 'no webhook while the Deployment is not ready');

    const installing = applyInstall(rest, objects, options(ns, `r${sfx}`, { wait: true }));
    // Still waiting on the Deployment: no webhook yet.
    await waitFor(
      async () =>
        (await serverObject(
          objects.find((o) => o.object.kind === 'Deployment')!,
          ns,
        )) !== undefined,
    );
    assert.equal(await serverObject(webhook, ns), undefined);
    await markAvailable(ns, 'istiod');
    const changes = byName(await installing);
    assert.equal(changes.get('ValidatingWebhookConfiguration/' + webhook.object.metadata.name)?.action, 'created');
    assert.ok(await serverObject(webhook, ns));
  });

  it('verify-install: missing and unready objects are named; all present and ready verifies', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('verify');
    const objects = rendered(ns, sfx);
    const missing = await verifyInstall(rest, objects, ns);
    assert.ok(missing.every((r) => r.problem !== undefined));
    assert.match(missing.find((r) => r.ref.kind === `Widget${sfx}`)?.problem ?? '', /serves no Widget/);
    await applyInstall(rest, objects, options(ns, `r${sfx}`));
    const installed = await verifyInstall(rest, objects, ns);
    assert.deepEqual(
      installed.filter((r) => r.problem !== undefined).map((r) => `${r.ref.kind}: ${r.problem}`),
      ['Deployment: rollout not yet observed by the deployment controller'],
    );
    await markAvailable(ns, 'istiod');
    assert.deepEqual(
      (await verifyInstall(rest, objects, ns)).filter((r) => r.problem !== undefined),
      [],
    );
  });

  it('uninstall removes what install created, one revision only; CRDs only with --purge', async () => {
    const sfx = fresh();
    const ns = await cluster.namespace('uninstall');
    const objects = rendered(ns, sfx);
    await applyInstall(rest, objects, options(ns, `r${sfx}`));
    const other: InstallObject = {
      chart: 'meshpilot',
      template: 'meshpilot/templates/configmap.yaml',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'istio-canary', namespace: ns } },
    };
    await applyInstall(rest, [other], options(ns, `canary${sfx}`));

    const plan = await uninstallPlan(rest, { revision: `r${sfx}` }, false);
    const removed = await uninstall(rest, plan);
    assert.equal(removed[0]?.ref.kind, 'ValidatingWebhookConfiguration', 'webhooks go first');
    assert.deepEqual(
      removed.map((c) => c.ref.name).sort(),
      objects
        .filter((o) => o.object.kind !== 'CustomResourceDefinition')
        .map((o) => o.object.metadata.name)
        .sort(),
    );
    for (const o of objects) {
      const live = await serverObject(o, ns);
      if (o.object.kind === 'CustomResourceDefinition') assert.ok(live, 'CRD kept without --purge');
      else assert.equal(live, undefined, `${o.object.kind} ${o.object.metadata.name} removed`);
    }
    assert.ok(await serverObject(other, ns), "another revision's object is kept");

    const purged = await uninstall(rest, await uninstallPlan(rest, { revision: `r${sfx}` }, true));
    assert.deepEqual(
      purged.map((c) => `${c.ref.kind} ${c.action}`),
      ['CustomResourceDefinition removed'],
    );
    await waitFor(
      async () =>
        (await serverObject(
          objects.find((o) => o.object.kind === 'CustomResourceDefinition')!,
          ns,
        )) === undefined,
      { description: 'CRD deleted' },
    );
  });
});
