import assert from 'node:assert/strict';
import { test } from 'node:test';
import { schemaValidationAnalyzer } from './schema-validation.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('schema-validation', n);

test('IST0106 for each validation error of each rejected document, valid documents untouched', async () => {
  const lines = await analyzeLines(schemaValidationAnalyzer, [
    f('invalid-weight.yaml'),
    f('no-servers.yaml'),
    f('unknown-field.yaml'),
    f('valid.yaml'),
  ]);
  assert.deepEqual(lines, [
    'Error [IST0106] (DestinationRule default/typo testdata/meshctl/analyze/schema-validation/unknown-field.yaml:7) Schema validation error: spec.trafficPolicyy: unknown field "trafficPolicyy"',
    'Error [IST0106] (Gateway default/empty-gw testdata/meshctl/analyze/schema-validation/no-servers.yaml:7) Schema validation error: spec.servers: gateway must have at least one server',
    'Error [IST0106] (VirtualService default/bad-weight testdata/meshctl/analyze/schema-validation/invalid-weight.yaml:11) Schema validation error: spec.http[0].route[0].weight: weight -5 < 0',
  ]);
});

test('no IST0106 for a valid file', async () => {
  assert.deepEqual(await analyzeLines(schemaValidationAnalyzer, [f('valid.yaml')]), []);
});
