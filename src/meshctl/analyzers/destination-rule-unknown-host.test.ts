import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeLines, scenario } from './test-helper.js';
import { destinationRuleSubsetPodsAnalyzer as unknownDestinationRuleHostAnalyzer } from './destination-rule-subset-pods.js';

const f = (n: string): string => scenario('unknown-destination-rule-host', n);

test('IST0174 for a host with no Service', async () => {
  assert.deepEqual(await analyzeLines(unknownDestinationRuleHostAnalyzer, [f('unknown.yaml')]), [
    'Warning [IST0174] (DestinationRule default/details testdata/meshctl/analyze/unknown-destination-rule-host/unknown.yaml:1) The host details defined in the DestinationRule does not match any services in the mesh.',
  ]);
});

test('Services in the rule namespace and ServiceEntry hosts match; a misspelt host and (as in istioctl) a wildcard host do not', async () => {
  assert.deepEqual(await analyzeLines(unknownDestinationRuleHostAnalyzer, [f('known.yaml'), f('service-entry.yaml')]), [
    'Warning [IST0174] (DestinationRule default/typo testdata/meshctl/analyze/unknown-destination-rule-host/service-entry.yaml:19) The host httbin.org defined in the DestinationRule does not match any services in the mesh.',
    'Warning [IST0174] (DestinationRule prod/all-prod testdata/meshctl/analyze/unknown-destination-rule-host/known.yaml:18) The host *.prod.svc.cluster.local defined in the DestinationRule does not match any services in the mesh.',
  ]);
});
