/** Of several VirtualServices for one host, the oldest routes it (istiod), also after incremental changes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { VirtualServiceIndex } from './virtual-service-index.js';

const DOMAIN = 'cluster.local';
const vs = (namespace: string, name: string, hosts: string[], creationTimestamp?: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace, ...(creationTimestamp ? { creationTimestamp } : {}) },
  spec: { hosts, http: [{ route: [{ destination: { host: hosts[0] } }] }] },
});
const JAN = '2024-01-01T00:00:00Z';
const MAR = '2024-03-01T00:00:00Z';

describe('VirtualServiceIndex: the oldest wins (creation time, then name, then namespace)', () => {
  const objects = [
    vs('apps', 'a-new', ['reviews.example.com', '*.wild.example.com'], MAR),
    vs('apps', 'z-old', ['reviews.example.com', '*.wild.example.com'], JAN),
  ];

  it('exact and wildcard hosts', () => {
    const idx = VirtualServiceIndex.build(snapshotOf(objects), DOMAIN);
    assert.equal(idx.forHost('reviews.example.com', 'apps')?.meta.name, 'z-old');
    assert.equal(idx.forHost('x.wild.example.com', 'apps')?.meta.name, 'z-old');
  });

  it('a file object (no creation time) is oldest; equal times go by name before namespace', () => {
    const idx = VirtualServiceIndex.build(
      snapshotOf([...objects, vs('zz', 'm-file', ['reviews.example.com']), vs('aa', 'n-file', ['reviews.example.com'])]),
      DOMAIN,
    );
    assert.equal(idx.forHost('reviews.example.com', 'apps')?.meta.name, 'm-file');
  });

  it('withChanges keeps the order when a newer one is added', () => {
    const before = VirtualServiceIndex.build(snapshotOf(objects.slice(1)), DOMAIN);
    const after = snapshotOf(objects);
    const idx = before.withChanges(after, [{ kind: 'VirtualService', namespace: 'apps', name: 'a-new' }], DOMAIN);
    assert.equal(idx.forHost('reviews.example.com', 'apps')?.meta.name, 'z-old');
    assert.equal(idx.forHost('x.wild.example.com', 'apps')?.meta.name, 'z-old');
  });
});
