import assert from 'node:assert/strict';
import { test } from 'node:test';
import { telemetryDefaultSelectorAnalyzer } from './telemetry-default-selector.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('telemetry-default-selector', n);
const D = 'testdata/meshctl/analyze/telemetry-default-selector';

test('IST0160 on each selector-less Telemetry when a namespace has two (v1 and v1alpha1 alike)', async () => {
  const text = 'The Telemetries [access-logs tracing] in namespace "shop" have no workload selector, which can lead to undefined behavior.';
  assert.deepEqual(await analyzeLines(telemetryDefaultSelectorAnalyzer, [f('two-defaults.yaml')]), [
    `Error [IST0160] (Telemetry shop/access-logs ${D}/two-defaults.yaml:10) ${text}`,
    `Error [IST0160] (Telemetry shop/tracing ${D}/two-defaults.yaml:1) ${text}`,
  ]);
});

test('one selector-less Telemetry per namespace, the others with a selector (empty included): nothing', async () => {
  assert.deepEqual(await analyzeLines(telemetryDefaultSelectorAnalyzer, [f('ok.yaml')]), []);
});
