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
