import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ipAddressBytes, ipAddressText, ipPrefixBytes } from './ip.js';

const bytes = (b: Uint8Array | undefined): number[] | undefined => (b ? [...b] : undefined);

describe('ipAddressBytes / ipPrefixBytes (Go netip rules)', () => {
  it('IPv4: four decimal fields, no leading zeros', () => {
    assert.deepEqual(bytes(ipAddressBytes('10.0.0.255')), [10, 0, 0, 255]);
    for (const bad of ['010.0.0.1', '10.0.0', '10.0.0.256', '1.2.3.4.5', '', 'a.b.c.d', '1..2.3'])
      assert.equal(ipAddressBytes(bad), undefined, bad);
  });

  it('IPv6: compressed zeros, a trailing IPv4 quad, a zone (dropped) on addresses only', () => {
    assert.deepEqual(bytes(ipAddressBytes('::1')), [...new Array<number>(15).fill(0), 1]);
    assert.deepEqual(bytes(ipAddressBytes('::ffff:1.2.3.4')), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 1, 2, 3, 4]);
    assert.deepEqual(bytes(ipAddressBytes('fe80::1%eth0'))?.slice(0, 2), [0xfe, 0x80]);
    assert.deepEqual(bytes(ipAddressBytes('1:2:3:4:5:6:7:8'))?.slice(14), [0, 8]);
    for (const bad of ['1::2::3', '1:2:3:4:5:6:7', '12345::', 'fe80::1%', '::1.2.3', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7::8']) {
      assert.equal(ipAddressBytes(bad), undefined, bad);
    }
  });

  it('prefixes keep host bits; length within the family; no zone', () => {
    const p = ipPrefixBytes('10.1.2.3/8');
    assert.deepEqual(p && { address: bytes(p.address), bits: p.bits }, { address: [10, 1, 2, 3], bits: 8 });
    assert.equal(ipPrefixBytes('2001:db8::/128')?.bits, 128);
    for (const bad of ['10.0.0.0/33', '10.0.0.0/08', '10.0.0.0/', '10.0.0.0', 'fe80::%eth0/64', '::/129'])
      assert.equal(ipPrefixBytes(bad), undefined, bad);
  });
});

describe('ipAddressText', () => {
  it('writes IPv4 as a dotted quad and IPv6 with the longest zero run compressed', () => {
    const text = (t: string): string | undefined => ipAddressText(ipAddressBytes(t) ?? new Uint8Array());
    assert.equal(text('10.0.0.255'), '10.0.0.255');
    assert.equal(text('::1'), '::1');
    assert.equal(text('::'), '::');
    assert.equal(text('fd00:0:0:1::5'), 'fd00:0:0:1::5');
    assert.equal(text('1:0:0:2:0:0:0:3'), '1:0:0:2::3');
    assert.equal(text('1:2:3:4:5:6:7:8'), '1:2:3:4:5:6:7:8');
    assert.equal(text('1:0:2:3:4:5:6:7'), '1:0:2:3:4:5:6:7');
    assert.equal(ipAddressText(new Uint8Array(3)), undefined);
  });
});
