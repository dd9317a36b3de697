import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../test-io.js';

const D = 'testdata/meshctl/analyze/telemetry-providers';
const codes = ['IST0002', 'IST0157'];
const lines = async (...args: string[]): Promise<string[]> =>
  (await run(['analyze', '-A', ...args])).stdout.split('\n').filter((l) => codes.some((c) => l.includes(`[${c}]`)));

test('IST0157 for an enabled access log entry without providers when the mesh has no default; IST0002 for tracing through a Lightstep provider', async () => {
  assert.deepEqual(await lines('--meshConfigFile', `${D}/mesh-lightstep.yaml`, `${D}/telemetry.yaml`), [
    `Warning [IST0002] (Telemetry istio-system/mesh-default ${D}/telemetry.yaml:1) Deprecated: The Lightstep provider tracing-ls is deprecated, please migrate to OpenTelemetry provider.`,
    `Warning [IST0157] (Telemetry istio-system/mesh-default ${D}/telemetry.yaml:1) The Telemetry mesh-default in namespace "istio-system" with empty providers will be ignored.`,
  ]);
});

test('a default access log provider in the mesh config, and no Lightstep provider: nothing', async () => {
  assert.deepEqual(await lines('--meshConfigFile', `${D}/mesh-default-logs.yaml`, `${D}/telemetry.yaml`), []);
});

test('a --meshConfigFile with an unknown field: exit 65 naming the file and field', async () => {
  const r = await run(['analyze', '--meshConfigFile', `${D}/telemetry.yaml`, `${D}/telemetry.yaml`]);
  assert.equal(r.code, 65);
  assert.match(r.stderr, /^Error: testdata\/meshctl\/analyze\/telemetry-providers\/telemetry.yaml: field apiVersion: /);
});
