import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sidecarSelectorAnalyzer } from './sidecar-selector.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('sidecar-selector', n);

test('IST0110 when two Sidecars select the same pod, at metadata.name', async () => {
  assert.deepEqual(await analyzeLines(sidecarSelectorAnalyzer, [f('overlapping-selectors.yaml')]), [
    'Error [IST0110] (Sidecar team-b/by-app testdata/meshctl/analyze/sidecar-selector/overlapping-selectors.yaml:13) The Sidecars [by-app by-version] in namespace "team-b" select the same workload pod "reviews-v1-abc", which can lead to undefined behavior.',
    'Error [IST0110] (Sidecar team-b/by-version testdata/meshctl/analyze/sidecar-selector/overlapping-selectors.yaml:24) The Sidecars [by-app by-version] in namespace "team-b" select the same workload pod "reviews-v1-abc", which can lead to undefined behavior.',
  ]);
});

test('IST0101 selector when a Sidecar selects no pod of its namespace', async () => {
  assert.deepEqual(await analyzeLines(sidecarSelectorAnalyzer, [f('no-matching-pod.yaml')]), [
    'Error [IST0101] (Sidecar team-d/ratings testdata/meshctl/analyze/sidecar-selector/no-matching-pod.yaml:16) Referenced selector not found: "app=ratings,version=v2"',
  ]);
});

test('a Sidecar selecting one pod, next to a default Sidecar, is fine', async () => {
  assert.deepEqual(await analyzeLines(sidecarSelectorAnalyzer, [f('ok.yaml')]), []);
});

test('IST0167 for a Sidecar selecting a pod in ambient mode, instead of any conflict', async () => {
  assert.deepEqual(await analyzeLines(sidecarSelectorAnalyzer, [f('ambient.yaml')]), [
    'Warning [IST0167] (Sidecar mixed/web testdata/meshctl/analyze/sidecar-selector/ambient.yaml:14) The policy has no impact: selected workload is in ambient mode, the policy has no impact.',
  ]);
});
