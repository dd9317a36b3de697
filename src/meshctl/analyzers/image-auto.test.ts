import assert from 'node:assert/strict';
import { test } from 'node:test';
import { imageAutoAnalyzer } from './image-auto.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/image-auto';

test('IST0147 for a Pod with an `image: auto` proxy, IST0146 for a Deployment no Istio webhook injects; an injected one and other containers: nothing', async () => {
  assert.deepEqual(await analyzeLines(imageAutoAnalyzer, [scenario('image-auto', 'objects.yaml')]), [
    `Error [IST0147] (Pod shop/gateway-abc ${D}/objects.yaml:50) Pod gateway-abc contains \`image: auto\` but does not match any Istio injection webhook selectors.`,
    `Warning [IST0146] (Deployment plain/gateway ${D}/objects.yaml:38) Deployment gateway contains \`image: auto\` but does not match any Istio injection webhook selectors.`,
  ]);
});
