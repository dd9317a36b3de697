import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conditionsAnalyzer } from './conditions.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/conditions';

test('IST0171 for failed Service waypoint binding, a partly accepted AuthorizationPolicy and an unresolved route parent; healthy and foreign conditions: nothing', async () => {
  assert.deepEqual(await analyzeLines(conditionsAnalyzer, [scenario('conditions', 'objects.yaml')]), [
    `Warning [IST0171] (AuthorizationPolicy shop/allow-get ${D}/objects.yaml:20) A condition with a negative status is present: type=WaypointAccepted, reason=PartiallyInvalid, message=Invalid targetRefs: shop/gone.`,
    `Warning [IST0171] (HTTPRoute shop/reviews ${D}/objects.yaml:34) A condition with a negative status is present: type=ResolvedRefs, reason=BackendNotFound, message=backend(reviews-v9.shop.svc.cluster.local) not found.`,
    `Warning [IST0171] (Service shop/reviews ${D}/objects.yaml:1) A condition with a negative status is present: type=istio.io/WaypointBound, reason=WaypointNotFound, message=waypoint shop/waypoint not found.`,
  ]);
});
