/**
 * Outbound listeners on auto-allocated addresses, held to the real istiod: the WHOLE listeners and
 * routes of sidecars with DNS_CAPTURE + DNS_AUTO_ALLOCATE (IPv4 and IPv6-only) and of one with
 * DNS_CAPTURE alone, for ServiceEntries without addresses (testdata/dns-listeners, captured by
 * `npx tsx scripts/istiod-dns-listeners-golden.ts`). Every leaf must be equal unless
 * whole/deliberate.ts lists it (the same list istiod-whole.test.ts applies to every corpus).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { configDigest } from './istiod-compare.js';
import { DNS_LISTENERS_CONFIG_DIR, DNS_LISTENERS_ISTIOD_DIR, DNS_LISTENERS_PROXIES } from './dns-listeners-fixture.js';
import { loadCases, type Case } from './whole/corpora.js';
import { DELIBERATE } from './whole/deliberate.js';
import { compareCase, formatDiff } from './whole/similarity.js';

let cases: Case[] = [];
before(async () => {
  cases = await loadCases(['dns-listeners']);
});

const listenerNames = (c: Case, side: 'istiod' | 'meshpilot'): string[] =>
  c[side]
    .filter((r) => r.type === 'listener')
    .map((r) => r.name)
    .sort();
const byProxy = (proxy: string): Case => cases.find((c) => c.proxy === proxy)!;

describe('listeners on auto-allocated addresses, against istiod', () => {
  it('the goldens are of the current config (else recapture: npx tsx scripts/istiod-dns-listeners-golden.ts)', () => {
    for (const proxy of Object.keys(DNS_LISTENERS_PROXIES)) {
      const doc = JSON.parse(readFileSync(join(DNS_LISTENERS_ISTIOD_DIR, `${proxy}.json`), 'utf8')) as { source: { configSha256: string } };
      assert.equal(doc.source.configSha256, configDigest(DNS_LISTENERS_CONFIG_DIR), proxy);
    }
  });

  it('istiod listens on allocated addresses for the allocating proxies only (the comparison is about them)', () => {
    assert.ok(listenerNames(byProxy('allocating'), 'istiod').some((n) => n.startsWith('240.240.')));
    assert.ok(listenerNames(byProxy('allocating-ipv6'), 'istiod').some((n) => n.startsWith('2001:2::')));
    assert.ok(!listenerNames(byProxy('capture-only'), 'istiod').some((n) => n.startsWith('240.240.') || n.startsWith('2001:2::')));
  });

  it('the listeners on allocated addresses are the same set, and each is equal leaf for leaf', () => {
    const allocated = (n: string): boolean => n.startsWith('240.240.') || n.startsWith('2001:2::');
    for (const c of cases) {
      assert.deepEqual(listenerNames(c, 'meshpilot').filter(allocated), listenerNames(c, 'istiod').filter(allocated), c.proxy);
      const r = compareCase(c, []);
      const off = r.cmp.diffs.filter((d) => d.type === 'listener' && allocated(d.name) && !d.name.endsWith('_9000'));
      assert.deepEqual(
        off.map((d) => formatDiff(c, d)),
        [],
        c.proxy,
      );
    }
  });

  it('every listener and route: no difference but the listed ones', () => {
    const unexplained = cases.flatMap((c) => compareCase(c, DELIBERATE).unexplained.map((d) => formatDiff(c, d)));
    assert.deepEqual(unexplained, []);
  });
});
