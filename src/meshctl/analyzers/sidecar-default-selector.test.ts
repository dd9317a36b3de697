import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sidecarDefaultSelectorAnalyzer } from './sidecar-default-selector.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('sidecar-selector', n);

test('IST0111 on each selector-less Sidecar when a namespace has two', async () => {
  assert.deepEqual(await analyzeLines(sidecarDefaultSelectorAnalyzer, [f('two-default-sidecars.yaml')]), [
    'Error [IST0111] (Sidecar team-a/default testdata/meshctl/analyze/sidecar-selector/two-default-sidecars.yaml:1) The Sidecars [default extra] in namespace "team-a" have no workload selector, which can lead to undefined behavior.',
    'Error [IST0111] (Sidecar team-a/extra testdata/meshctl/analyze/sidecar-selector/two-default-sidecars.yaml:10) The Sidecars [default extra] in namespace "team-a" have no workload selector, which can lead to undefined behavior.',
  ]);
});

test('one selector-less Sidecar per namespace is fine', async () => {
  assert.deepEqual(await analyzeLines(sidecarDefaultSelectorAnalyzer, [f('ok.yaml'), f('overlapping-selectors.yaml')]), []);
});

test('IST0167 for a selector-less Sidecar of an ambient namespace (not when sidecar injection is also on)', async () => {
  assert.deepEqual(await analyzeLines(sidecarDefaultSelectorAnalyzer, [f('ambient.yaml')]), [
    'Warning [IST0167] (Sidecar ambient/default testdata/meshctl/analyze/sidecar-selector/ambient.yaml:31) The policy has no impact: namespace is in ambient mode, the policy has no impact.',
  ]);
});
