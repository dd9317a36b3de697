import assert from 'node:assert/strict';
import { test } from 'node:test';
import { telemetrySelectorAnalyzer } from './telemetry-selector.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/telemetry-selector';

test('IST0101 for a selector matching no pod (at the label), IST0159 for each Telemetry selecting the same pod (at metadata.name)', async () => {
  const conflict = (name: string, line: number): string =>
    `Error [IST0159] (Telemetry shop/${name} ${D}/objects.yaml:${line}) The Telemetries [front-logs web-logs] in namespace "shop" select the same workload pod "web-1", which can lead to undefined behavior.`;
  assert.deepEqual(await analyzeLines(telemetrySelectorAnalyzer, [scenario('telemetry-selector', 'objects.yaml')]), [
    `Error [IST0101] (Telemetry shop/cache-logs ${D}/objects.yaml:50) Referenced selector not found: "app=cache"`,
    conflict('front-logs', 35),
    conflict('web-logs', 24),
  ]);
});

test('one Telemetry per pod and namespace-wide ones: nothing', async () => {
  assert.deepEqual(await analyzeLines(telemetrySelectorAnalyzer, [scenario('telemetry-selector', 'ok.yaml')]), []);
});
