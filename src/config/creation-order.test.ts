import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from './config.js';
import { byCreationTime, byCreationTimeGatewayApi, inCreationOrder, oldestConfig } from './creation-order.js';

const cfg = (namespace: string, name: string, creationTimestamp?: number): Config =>
  ({
    meta: {
      kind: 'Sidecar',
      namespace,
      name,
      labels: {},
      annotations: {},
      ...(creationTimestamp !== undefined ? { creationTimestamp } : {}),
    },
    spec: {},
  }) as unknown as Config;
const ids = (cs: readonly Config[]): string[] => cs.map((c) => `${c.meta.namespace}/${c.meta.name}`);

describe('creation order', () => {
  const list = [cfg('b', 'x', 2000), cfg('a', 'y', 1000), cfg('a', 'x', 2000), cfg('z', 'file'), cfg('a', 'file')];

  it("istio kinds: creation time (none first), then name, then namespace (istiod's configCompareByCreationTime)", () => {
    assert.deepEqual(ids([...list].sort(byCreationTime)), ['a/file', 'z/file', 'a/y', 'a/x', 'b/x']);
  });

  it('Gateway API: creation time, then namespace, then name', () => {
    assert.deepEqual(ids([...list].sort(byCreationTimeGatewayApi)), ['a/file', 'z/file', 'a/y', 'a/x', 'b/x']);
    assert.deepEqual(ids([cfg('b', 'a'), cfg('a', 'b')].sort(byCreationTimeGatewayApi)), ['a/b', 'b/a']);
    assert.deepEqual(ids([cfg('b', 'a'), cfg('a', 'b')].sort(byCreationTime)), ['b/a', 'a/b']);
  });

  it('inCreationOrder sorts a copy once per list; oldestConfig picks its first', () => {
    const frozen = Object.freeze([...list]);
    const sorted = inCreationOrder(frozen);
    assert.deepEqual(ids(sorted), ['a/file', 'z/file', 'a/y', 'a/x', 'b/x']);
    assert.equal(inCreationOrder(frozen), sorted, 'cached per list');
    assert.deepEqual(ids(frozen), ['b/x', 'a/y', 'a/x', 'z/file', 'a/file'], 'the input is left as it was');
    assert.equal(oldestConfig(list.slice(0, 3))?.meta.name, 'y');
    assert.equal(oldestConfig([]), undefined);
  });
});
