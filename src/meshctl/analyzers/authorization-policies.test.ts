import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authorizationPoliciesAnalyzer } from './authorization-policies.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/authorization-policies';

test('IST0127 for policies matching no mesh workload (namespace-wide and mesh-wide too), IST0101 for rule namespaces that do not exist', async () => {
  assert.deepEqual(await analyzeLines(authorizationPoliciesAnalyzer, [scenario('authorization-policies', 'objects.yaml')]), [
    `Error [IST0101] (AuthorizationPolicy shop/api ${D}/objects.yaml:57) Referenced namespace not found: "payments"`,
    `Error [IST0101] (AuthorizationPolicy shop/api ${D}/objects.yaml:58) Referenced namespace not found: "*-staging"`,
    `Warning [IST0127] (AuthorizationPolicy istio-system/mesh-debug ${D}/objects.yaml:76) No matching workloads for this resource with the following labels: app=debug`,
    `Warning [IST0127] (AuthorizationPolicy shop/api ${D}/objects.yaml:46) No matching workloads for this resource with the following labels: app=api`,
    `Warning [IST0127] (AuthorizationPolicy tools/deny-all ${D}/objects.yaml:60) No matching workloads for this resource with the following labels: `,
  ]);
});
