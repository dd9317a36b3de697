import assert from 'node:assert/strict';
import { test } from 'node:test';
import { destinationRuleReferenceAnalyzer } from './destination-rule-reference.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('destination-rule-reference', n);

test('IST0101 host+subset for a subset the DestinationRule does not define', async () => {
  assert.deepEqual(await analyzeLines(destinationRuleReferenceAnalyzer, [f('rules.yaml'), f('missing-subset.yaml')]), [
    'Error [IST0101] (VirtualService default/reviews testdata/meshctl/analyze/destination-rule-reference/missing-subset.yaml:12) Referenced host+subset in destinationrule not found: "reviews+v3"',
  ]);
});

test('IST0101 host+subset when no DestinationRule exists for the host', async () => {
  assert.deepEqual(await analyzeLines(destinationRuleReferenceAnalyzer, [f('rules.yaml'), f('no-rule.yaml')]), [
    'Error [IST0101] (VirtualService default/ratings testdata/meshctl/analyze/destination-rule-reference/no-rule.yaml:10) Referenced host+subset in destinationrule not found: "ratings+v1"',
  ]);
});
