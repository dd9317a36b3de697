import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deprecationAnalyzer } from './deprecation.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/deprecation';

test('IST0002 for a fault delay percent, a Sidecar egressProxy and a removed rbac.istio.io CRD', async () => {
  assert.deepEqual(await analyzeLines(deprecationAnalyzer, [scenario('deprecation', 'objects.yaml')]), [
    `Warning [IST0002] (CustomResourceDefinition serviceroles.rbac.istio.io ${D}/objects.yaml:27) Deprecated: Custom resource type rbac.istio.io ServiceRole is removed`,
    `Warning [IST0002] (Sidecar shop/default ${D}/objects.yaml:16) Deprecated: OutboundTrafficPolicy.EgressProxy ignored`,
    `Warning [IST0002] (VirtualService shop/slow ${D}/objects.yaml:1) Deprecated: HTTPRoute.fault.delay.percent is deprecated; use HTTPRoute.fault.delay.percentage`,
  ]);
});

test('percentage and a Sidecar without egressProxy: nothing', async () => {
  assert.deepEqual(await analyzeLines(deprecationAnalyzer, [scenario('deprecation', 'ok.yaml')]), []);
});
