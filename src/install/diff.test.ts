import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changedFields } from './diff.js';
import { inApplyOrder } from './order.js';
import { formatChanges } from './report.js';
import { readinessOf } from './wait.js';
import { formatGoDurationMs as formatDuration, parseGoDurationMs as parseDuration } from '../util/duration.js';

test('changedFields: the paths that differ, server-maintained fields ignored', () => {
  const before = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'istiod',
      resourceVersion: '1',
      generation: 1,
      managedFields: [{ manager: 'a' }],
      labels: { 'istio.io/rev': 'default', app: 'istiod' },
    },
    spec: { replicas: 1, template: { spec: { containers: [{ name: 'discovery', image: 'a:1', args: ['x'] }] } } },
    status: { availableReplicas: 0 },
  };
  const same = {
    ...before,
    metadata: { ...before.metadata, resourceVersion: '2', generation: 2, managedFields: [] },
    status: { availableReplicas: 1 },
  };
  assert.deepEqual(changedFields(before, same), []);
  const after = {
    ...before,
    metadata: { ...before.metadata, labels: { 'istio.io/rev': 'canary', app: 'istiod' } },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'discovery', image: 'a:2', args: ['x', 'y'] }] } } },
  };
  assert.deepEqual(changedFields(before, after), [
    'metadata.labels["istio.io/rev"]',
    'spec.replicas',
    'spec.template.spec.containers[0].args',
    'spec.template.spec.containers[0].image',
  ]);
  assert.deepEqual(changedFields({ data: { a: '1' } }, { data: { a: '1', b: '2' } }), ['data.b']);
});

test('apply order: dependencies first, render order kept within a phase', () => {
  const kinds = [
    'ValidatingWebhookConfiguration',
    'Deployment',
    'Service',
    'ConfigMap',
    'HorizontalPodAutoscaler',
    'ClusterRole',
    'CustomResourceDefinition',
    'ServiceAccount',
    'Namespace',
  ];
  assert.deepEqual(
    inApplyOrder(kinds, (k) => k),
    [
      'Namespace',
      'CustomResourceDefinition',
      'ClusterRole',
      'ServiceAccount',
      'ConfigMap',
      'Service',
      'HorizontalPodAutoscaler',
      'Deployment',
      'ValidatingWebhookConfiguration',
    ],
  );
});

test('readiness: CRD Established, Deployment updated and available (observed generation), DaemonSet pods available', () => {
  assert.deepEqual(
    readinessOf({
      kind: 'CustomResourceDefinition',
      status: { conditions: [{ type: 'Established', status: 'False', message: 'installing' }] },
    }),
    { ready: false, reason: 'not Established: installing' },
  );
  assert.deepEqual(readinessOf({ kind: 'CustomResourceDefinition', status: { conditions: [{ type: 'Established', status: 'True' }] } }), {
    ready: true,
  });
  const dep = (status: Record<string, number>) => ({ kind: 'Deployment', metadata: { generation: 2 }, spec: { replicas: 2 }, status });
  assert.deepEqual(readinessOf(dep({ observedGeneration: 1, updatedReplicas: 2, availableReplicas: 2 })), {
    ready: false,
    reason: 'rollout not yet observed by the deployment controller',
  });
  assert.deepEqual(readinessOf(dep({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 1 })), {
    ready: false,
    reason: '1 of 2 replicas available',
  });
  assert.deepEqual(readinessOf(dep({ observedGeneration: 2, updatedReplicas: 2, availableReplicas: 2 })), { ready: true });
  assert.deepEqual(
    readinessOf({
      kind: 'DaemonSet',
      metadata: { generation: 1 },
      status: { observedGeneration: 1, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2 },
    }),
    { ready: false, reason: '2 of 3 pods available' },
  );
  assert.deepEqual(readinessOf({ kind: 'ConfigMap' }), { ready: true });
});

test('Go durations for --readiness-timeout', () => {
  assert.equal(parseDuration('5m0s'), 300_000);
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.equal(parseDuration('1h'), 3_600_000);
  for (const bad of ['', '5', '5 minutes', 'm5', '5m trailing']) assert.equal(parseDuration(bad), undefined, bad);
  assert.equal(formatDuration(300_000), '5m0s');
  assert.equal(formatDuration(1500), '1.5s');
});

test('the report: one line per object (fields of configured ones), then totals', () => {
  const ref = (kind: string, name: string, namespace?: string) => ({ apiVersion: 'v1', kind, name, ...(namespace ? { namespace } : {}) });
  assert.equal(
    formatChanges([
      { ref: ref('ConfigMap', 'istio', 'istio-system'), action: 'configured', fields: ['data.mesh'] },
      { ref: ref('ClusterRole', 'istiod'), action: 'unchanged', fields: [] },
      { ref: ref('PodDisruptionBudget', 'istiod', 'istio-system'), action: 'pruned', fields: [] },
    ]),
    'ConfigMap istio-system/istio configured: data.mesh\nClusterRole istiod unchanged\nPodDisruptionBudget istio-system/istiod pruned\n1 configured, 1 unchanged, 1 pruned\n',
  );
  assert.equal(formatChanges([]), 'nothing to do\n');
});
