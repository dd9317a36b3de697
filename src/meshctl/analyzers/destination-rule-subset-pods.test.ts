import assert from 'node:assert/strict';
import { test } from 'node:test';
import { destinationRuleSubsetPodsAnalyzer } from './destination-rule-subset-pods.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('destination-rule-subset-pods', n);

test('IST0173 for a subset no pod or WorkloadEntry of the service carries (a v3 pod of another app does not count)', async () => {
  assert.deepEqual(await analyzeLines(destinationRuleSubsetPodsAnalyzer, [f('pods.yaml'), f('subsets.yaml')]), [
    'Error [IST0173] (DestinationRule default/reviews testdata/meshctl/analyze/destination-rule-subset-pods/subsets.yaml:1) The Subset v3 defined in the DestinationRule does not select any pods. Which may lead to 503 UH (NoHealthyUpstream).',
  ]);
});

test('a host that names no service gets IST0174 and no subset check', async () => {
  assert.deepEqual(await analyzeLines(destinationRuleSubsetPodsAnalyzer, [f('pods.yaml'), f('unknown-host.yaml')]), [
    'Warning [IST0174] (DestinationRule default/nowhere testdata/meshctl/analyze/destination-rule-subset-pods/unknown-host.yaml:1) The host nowhere defined in the DestinationRule does not match any services in the mesh.',
  ]);
});

test("subsets may select by the pod's Node topology labels and host name (empty labels select nothing)", async () => {
  assert.deepEqual(
    await analyzeLines(destinationRuleSubsetPodsAnalyzer, ['testdata/meshctl/analyze/destination-rule-subset-pods/topology.yaml']),
    [
      'Error [IST0173] (DestinationRule shop/ratings testdata/meshctl/analyze/destination-rule-subset-pods/topology.yaml:32) The Subset no-subzone defined in the DestinationRule does not select any pods. Which may lead to 503 UH (NoHealthyUpstream).',
    ],
  );
});
