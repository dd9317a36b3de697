/** Which Telemetry objects apply to a workload, and in which order: istiod's, oldest first. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { TelemetryIndex } from './telemetry-index.js';

const ROOT = 'istio-system';
const telemetry = (namespace: string, name: string, created?: string, selector?: Record<string, string>): Record<string, unknown> => ({
  apiVersion: 'telemetry.istio.io/v1',
  kind: 'Telemetry',
  metadata: { name, namespace, ...(created ? { creationTimestamp: created } : {}) },
  spec: { ...(selector ? { selector: { matchLabels: selector } } : {}), tracing: [{ randomSamplingPercentage: 1 }] },
});
const JAN = '2024-01-01T00:00:00Z';
const MAR = '2024-03-01T00:00:00Z';

describe('TelemetryIndex: creation time, then name', () => {
  // Names that sort first were created last.
  const index = new TelemetryIndex(
    snapshotOf([
      telemetry(ROOT, 'a-root', MAR),
      telemetry(ROOT, 'z-root', JAN),
      telemetry('apps', 'a-ns', MAR),
      telemetry('apps', 'z-ns', JAN),
      telemetry('apps', 'a-web', MAR, { app: 'web' }),
      telemetry('apps', 'z-web', JAN, { app: 'web' }),
      telemetry('files', 'a-api', JAN),
      telemetry('files', 'z-file'),
    ]),
    ROOT,
  );

  it('namespace-wide = the oldest without selector; workload ones follow oldest first (later ones override)', () => {
    assert.equal(index.forWorkload('apps', { app: 'web' }).key, 'istio-system/z-root,apps/z-ns,apps/z-web,apps/a-web');
  });

  it('an object without creation time (from a file) counts as oldest', () => {
    assert.equal(index.forWorkload('files', {}).key, 'istio-system/z-root,files/z-file');
  });
});
