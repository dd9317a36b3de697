/**
 * Outbound listeners on auto-allocated addresses, held to the real istiod: the WHOLE listeners,
 * routes and clusters of sidecars with DNS_CAPTURE + DNS_AUTO_ALLOCATE (IPv4, IPv6-only, dual-stack) and of one
 * with DNS_CAPTURE alone, for ServiceEntries without addresses, with sniffed ports and with an
 * address of each family (testdata/dns-listeners, captured by
 * `npx tsx scripts/istiod-dns-listeners-golden.ts`); the dual-stack sidecar also from an istiod
 * with ISTIO_DUAL_STACK=true (scenario dual-stack). Every leaf must be equal unless
 * whole/deliberate.ts lists it (the same list istiod-whole.test.ts applies to every corpus).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { JsonObject } from '@bufbuild/protobuf';
import { configDigest } from './istiod-compare.js';
import {
  DNS_LISTENERS_CONFIG_DIR,
  DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR,
  DNS_LISTENERS_DUAL_STACK_PROXIES,
  DNS_LISTENERS_ISTIOD_DIR,
  DNS_LISTENERS_PROXIES,
} from './dns-listeners-fixture.js';
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
const byProxy = (proxy: string, scenario = 'dns-listeners'): Case => cases.find((c) => c.proxy === proxy && c.scenario === scenario)!;
const resource = (c: Case, side: 'istiod' | 'meshpilot', type: string, name: string): JsonObject | undefined =>
  c[side].find((r) => r.type === type && r.name === name)?.json as JsonObject | undefined;
/** A listener's additional addresses, as `address` strings. */
const additional = (l: JsonObject | undefined): string[] =>
  ((l?.additionalAddresses ?? []) as JsonObject[]).map((a) => String(((a.address as JsonObject).socketAddress as JsonObject).address));

describe('listeners on auto-allocated addresses, against istiod', () => {
  it('the goldens are of the current config (else recapture: npx tsx scripts/istiod-dns-listeners-golden.ts)', () => {
    const captured = [
      ...Object.keys(DNS_LISTENERS_PROXIES).map((p) => join(DNS_LISTENERS_ISTIOD_DIR, `${p}.json`)),
      ...Object.keys(DNS_LISTENERS_DUAL_STACK_PROXIES).map((p) => join(DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR, `${p}.json`)),
    ];
    for (const file of captured) {
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { source: { configSha256: string } };
      assert.equal(doc.source.configSha256, configDigest(DNS_LISTENERS_CONFIG_DIR), file);
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
      const off = r.cmp.diffs.filter((d) => d.type === 'listener' && allocated(d.name));
      assert.deepEqual(
        off.map((d) => formatDiff(c, d)),
        [],
        c.proxy,
      );
    }
  });

  it("a sniffed port on a service's address: istiod's HTTP chain names the service's own route configuration, non-HTTP goes to the service", () => {
    for (const [proxy, name] of [
      ['allocating', '240.240.65.120_9000'],
      ['allocating', '192.0.2.10_9001'],
      ['capture-only', '192.0.2.10_9001'],
    ] as const) {
      const l = resource(byProxy(proxy), 'istiod', 'listener', name);
      const text = JSON.stringify(l);
      assert.ok(text.includes('"routeConfigName":"') && !text.includes('tls_inspector'), `${proxy} ${name}`);
      assert.ok(JSON.stringify(l?.defaultFilterChain).includes('outbound|'), `${proxy} ${name}: default chain to the service`);
      assert.deepEqual(resource(byProxy(proxy), 'meshpilot', 'listener', name), l, `${proxy} ${name}`);
    }
    assert.ok(resource(byProxy('allocating'), 'istiod', 'route', 'web.external.test:9000'));
  });

  it('dual-stack: one listener per allocated host, the IPv6 address additional only when istiod serves dual stack', () => {
    const name = '240.240.16.5_5432';
    const off = byProxy('allocating-dual');
    const on = byProxy('allocating-dual', 'dual-stack');
    assert.deepEqual(additional(resource(off, 'istiod', 'listener', name)), []);
    assert.deepEqual(additional(resource(on, 'istiod', 'listener', name)), ['2001:2::f0f0:105']);
    assert.ok(!listenerNames(on, 'istiod').some((n) => n.startsWith('2001:2::')));
    for (const c of [off, on]) {
      assert.deepEqual(resource(c, 'meshpilot', 'listener', name), resource(c, 'istiod', 'listener', name), c.scenario);
      // Wildcard listeners add `::` whatever ISTIO_DUAL_STACK says; virtualOutbound only with it.
      assert.deepEqual(additional(resource(c, 'meshpilot', 'listener', '0.0.0.0_8080')), ['::'], c.scenario);
      assert.deepEqual(
        additional(resource(c, 'meshpilot', 'listener', 'virtualOutbound')),
        additional(resource(c, 'istiod', 'listener', 'virtualOutbound')),
        c.scenario,
      );
    }
  });

  it('every listener, route and cluster: no difference but the listed ones', () => {
    const unexplained = cases.flatMap((c) => compareCase(c, DELIBERATE).unexplained.map((d) => formatDiff(c, d)));
    assert.deepEqual(unexplained, []);
  });
});
