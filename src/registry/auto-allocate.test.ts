import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autoAllocateAddresses, fnv1a32 } from './auto-allocate.js';
import type { Service } from './model.js';

const svc = (hostname: string, over: Partial<Service> = {}): Service => ({
  hostname,
  namespace: 'default',
  ports: [{ name: 'http', port: 80, protocol: 'HTTP' }],
  resolution: 'DNS',
  addresses: [],
  meshExternal: true,
  exportTo: ['*'],
  source: { kind: 'ServiceEntry', namespace: 'default', name: hostname },
  ...over,
});

describe('ServiceEntry address auto-allocation', () => {
  it('hashes with 32-bit FNV-1a (the published test vectors)', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  });

  it('allocates only to resolved, non-wildcard hosts without addresses', () => {
    const out = autoAllocateAddresses([
      svc('a.example.com'),
      svc('b.example.com', { addresses: ['192.0.2.1'] }),
      svc('*.c.example.com'),
      svc('d.example.com', { resolution: 'NONE' }),
    ]);
    assert.deepEqual(
      out.map((s) => s.autoAllocated?.v4),
      // default/a.example.com: FNV-1a 0xde48ca75 % 65024 = slot 55925 → position 55926 = 219 × 255 + 81
      ['240.240.219.81', undefined, undefined, undefined],
    );
    assert.equal(out[0]!.autoAllocated?.v6, '2001:2::f0f0:db51');
  });

  it('moves a colliding host to another slot, deterministically, and gives the same key the same address', () => {
    // Two hostnames whose first hash picks the same slot.
    const bySlot = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const h = `h${i}.example.com`;
      const slot = fnv1a32(`default/${h}`) % (256 * 254);
      const other = bySlot.get(slot);
      if (other) pair = [other, h];
      else bySlot.set(slot, h);
    }
    const [first, second] = pair;
    const once = autoAllocateAddresses([svc(first), svc(second)]);
    const again = autoAllocateAddresses([svc(first), svc(second)]);
    assert.notEqual(once[0]!.autoAllocated?.v4, once[1]!.autoAllocated?.v4);
    assert.deepEqual(
      once.map((s) => s.autoAllocated),
      again.map((s) => s.autoAllocated),
    );
    // Alone, the first keeps its slot: the collision moved the second one only.
    assert.deepEqual(autoAllocateAddresses([svc(first)])[0]!.autoAllocated, once[0]!.autoAllocated);
    for (const s of once) assert.match(s.autoAllocated!.v4, /^240\.240\.\d+\.([1-9]\d*)$/);
  });
});
