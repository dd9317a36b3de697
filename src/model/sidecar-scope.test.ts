/** Which Sidecar applies to a workload when several could: istiod's choice, oldest first. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { selectSidecar } from './sidecar-scope.js';

const ROOT = 'istio-system';
const sidecar = (namespace: string, name: string, created?: string, selector?: Record<string, string>): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Sidecar',
  metadata: { name, namespace, ...(created ? { creationTimestamp: created } : {}) },
  spec: { ...(selector ? { workloadSelector: { labels: selector } } : {}), egress: [{ hosts: ['./*'] }] },
});
const JAN = '2024-01-01T00:00:00Z';
const MAR = '2024-03-01T00:00:00Z';

describe('selectSidecar: the oldest of each kind wins (creation time, then name)', () => {
  // Names that sort first were created last, so name order and creation order disagree.
  const config = snapshotOf([
    sidecar('apps', 'a-default', MAR),
    sidecar('apps', 'z-default', JAN),
    sidecar('apps', 'a-web', MAR, { app: 'web' }),
    sidecar('apps', 'z-web', JAN, { app: 'web' }),
    sidecar(ROOT, 'a-root', MAR),
    sidecar(ROOT, 'z-root', JAN),
    sidecar('files', 'a-api', JAN),
    sidecar('files', 'z-file'),
  ]);
  const pick = (ns: string, labels: Record<string, string>): string | undefined => selectSidecar(config, ROOT, ns, labels)?.meta.name;

  it('a workload selector beats the namespace default; among either the oldest', () => {
    assert.equal(pick('apps', { app: 'web' }), 'z-web');
    assert.equal(pick('apps', { app: 'db' }), 'z-default');
  });

  it("a namespace without one takes the root namespace's oldest selector-less Sidecar", () => {
    assert.equal(pick('other', {}), 'z-root');
  });

  it('an object without creation time (from a file) counts as oldest', () => {
    assert.equal(pick('files', {}), 'z-file');
  });
});
