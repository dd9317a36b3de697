import assert from 'node:assert/strict';
import { test } from 'node:test';
import { injectionImageAnalyzer } from './injection-image.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/injection-image';
const f = (n: string): string => scenario('injection-image', n);

test("IST0158 once per namespace, listing the pods whose proxy image is not the revision injector's (with the image type variant)", async () => {
  assert.deepEqual(await analyzeLines(injectionImageAnalyzer, [f('injector.yaml'), f('pods.yaml')]), [
    `Warning [IST0158] (Namespace shop ${D}/pods.yaml:1) The Istio proxy images of the pods running in the namespace do not match the image defined in the injection configuration (pod names: [stale-a stale-b]). This often happens after upgrading the Istio control-plane and can be fixed by redeploying the pods.`,
  ]);
});

test('without an injector ConfigMap there is nothing to compare with', async () => {
  assert.deepEqual(await analyzeLines(injectionImageAnalyzer, [f('pods.yaml')]), []);
});
