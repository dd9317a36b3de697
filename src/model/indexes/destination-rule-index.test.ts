/** DestinationRule lookup precedence, and which of several rules for one host applies (the oldest, as in istiod). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { DestinationRuleIndex } from './destination-rule-index.js';

const ROOT = 'istio-system';
const DOMAIN = 'cluster.local';
const rule = (namespace: string, name: string, host: string, created?: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'DestinationRule',
  metadata: { name, namespace, ...(created ? { creationTimestamp: created } : {}) },
  spec: { host },
});
const HOST = 'reviews.apps.svc.cluster.local';

describe('DestinationRuleIndex', () => {
  it('of several rules for one host in one namespace, the oldest applies (creation time, then name)', () => {
    const idx = new DestinationRuleIndex(
      snapshotOf([rule('apps', 'a-newer', 'reviews', '2024-03-01T00:00:00Z'), rule('apps', 'z-older', 'reviews', '2024-01-01T00:00:00Z')]),
      DOMAIN,
      ROOT,
    );
    assert.equal(idx.forHost(HOST, 'apps', 'apps')?.meta.name, 'z-older');
  });

  it('an object without creation time (from a file) counts as oldest; equal times go by name', () => {
    const files = new DestinationRuleIndex(
      snapshotOf([rule('apps', 'a-api', 'reviews', '2024-01-01T00:00:00Z'), rule('apps', 'z-file', 'reviews')]),
      DOMAIN,
      ROOT,
    );
    assert.equal(files.forHost(HOST, 'apps', 'apps')?.meta.name, 'z-file');
    const ties = new DestinationRuleIndex(snapshotOf([rule('apps', 'b', 'reviews'), rule('apps', 'a', 'reviews')]), DOMAIN, ROOT);
    assert.equal(ties.forHost(HOST, 'apps', 'apps')?.meta.name, 'a');
  });

  it("the proxy's namespace, then the service's, then the root; exact hosts before wildcards", () => {
    const idx = new DestinationRuleIndex(
      snapshotOf([rule(ROOT, 'root', HOST), rule('apps', 'svc-ns', '*.apps.svc.cluster.local'), rule('apps', 'exact', 'reviews')]),
      DOMAIN,
      ROOT,
    );
    assert.equal(idx.forHost(HOST, 'apps', 'apps')?.meta.name, 'exact');
    assert.equal(idx.forHost(HOST, 'client', 'apps')?.meta.name, 'exact');
    assert.equal(idx.forHost('other.example.com', 'client', 'apps'), undefined);
    assert.equal(new DestinationRuleIndex(snapshotOf([rule(ROOT, 'root', HOST)]), DOMAIN, ROOT).forHost(HOST, 'x', 'y')?.meta.name, 'root');
  });
});
