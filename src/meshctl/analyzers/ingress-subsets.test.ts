import assert from 'node:assert/strict';
import { test } from 'node:test';
import { destinationHostAnalyzer } from './destination-host.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('ingress-subsets', n);
const D = 'testdata/meshctl/analyze/ingress-subsets';
const ist0140 = async (file: string): Promise<string[]> =>
  (await analyzeLines(destinationHostAnalyzer, [f(file)])).filter((l) => l.includes('[IST0140]'));

test('IST0140 (virtualservice.DestinationHostAnalyzer) when a gateway route skips the subsets another VirtualService routes its own host to', async () => {
  assert.deepEqual(await ist0140('subsets.yaml'), [
    // istioctl looks the line up under the route's name ("http" here), so it finds the destination host.
    `Warning [IST0140] (VirtualService default/frontend ${D}/subsets.yaml:25) Subset in virtual service default/reviews-subsets has no effect on ingress gateway default/frontend requests`,
  ]);
});

test('subsets of a host the VirtualService does not own, or a gateway route naming its subset: nothing', async () => {
  assert.deepEqual(await ist0140('ok.yaml'), []);
});
