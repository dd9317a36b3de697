import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateObject } from './validate-object.js';

const origin = { file: 't.yaml', line: 1 };
const telemetry = (spec: unknown, apiVersion = 'telemetry.istio.io/v1'): unknown => ({
  apiVersion,
  kind: 'Telemetry',
  metadata: { name: 't', namespace: 'bookinfo' },
  spec,
});

describe('Telemetry validation (istiod ValidateTelemetry)', () => {
  it('accepts v1 and v1alpha1 with tracing, metrics and access logging', () => {
    for (const v of ['telemetry.istio.io/v1', 'telemetry.istio.io/v1alpha1']) {
      const r = validateObject(
        telemetry(
          {
            selector: { matchLabels: { app: 'reviews' } },
            tracing: [{ providers: [{ name: 'zipkin' }], randomSamplingPercentage: 10, customTags: { team: { literal: { value: 'a' } } } }],
            metrics: [
              {
                providers: [{ name: 'prometheus' }],
                overrides: [
                  { match: { metric: 'REQUEST_COUNT', mode: 'CLIENT' }, tagOverrides: { x: { value: 'y' }, z: { operation: 'REMOVE' } } },
                ],
              },
            ],
            accessLogging: [{ providers: [{ name: 'envoy' }], filter: { expression: 'response.code >= 400' } }],
          },
          v,
        ) as never,
        origin,
      );
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.value.meta.kind, 'Telemetry');
    }
  });

  it('names each bad field', () => {
    const r = validateObject(
      telemetry({
        selector: { matchLabels: { app: 'a' } },
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }],
        tracing: [{ providers: [{ name: '' }], randomSamplingPercentage: 101, customTags: { h: { header: { name: '' } } } }],
        metrics: [{ overrides: [{ tagOverrides: { up: { operation: 'UPSERT' }, rm: { operation: 'REMOVE', value: 'v' } } }] }],
      }) as never,
      origin,
    );
    assert.ok(!r.ok);
    assert.deepEqual(r.errors.map((e) => `${e.path}: ${e.message}`).sort(), [
      'spec.metrics[0].overrides[0].tagOverrides[rm]: tagOverrides.value may only be set when operation is UPSERT',
      'spec.metrics[0].overrides[0].tagOverrides[up]: tagOverrides.value must be set when operation is UPSERT',
      'spec.tracing[0].customTags[h]: header tag name may not be empty',
      'spec.tracing[0].providers[0].name: providers.name may not be empty',
      'spec.tracing[0].randomSamplingPercentage: randomSamplingPercentage must be in range [0.0, 100.0]',
      'spec: only one of targetRefs or workloadSelector can be set',
    ]);
  });
});
