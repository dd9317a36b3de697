import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { detectBackend, type BackendKind } from './backend.js';
import { buildCaptureRules } from './iptables/builder.js';
import { resolveCaptureConfig, type CaptureInput } from './iptables/config.js';
import { ALL_CASES, caseInput } from './iptables/golden-cases.js';
import { renderRestore } from './iptables/restore.js';
import type { RuleSet } from './iptables/rules.js';
import { applyCapture, removeCapture } from './runner.js';
import { availableBackends, createNetns, netnsSkipReason, saveState, type Netns } from '../../test/support/cni/netns.js';

/**
 * The runner against real iptables (root only): every golden option set loads on each back end,
 * lands exactly as its golden text would, re-applies to the same state and cleans up to the
 * state before, with someone else's rules in the same tables left alone.
 */

const skip = netnsSkipReason();

function foreign(ns: Netns, kind: BackendKind): void {
  for (const bin of [`iptables-${kind}`, `ip6tables-${kind}`]) {
    ns.run(bin, '-w', '-t', 'nat', '-N', 'OTHER');
    ns.run(bin, '-w', '-t', 'nat', '-A', 'PREROUTING', '-p', 'tcp', '--dport', '1', '-j', 'OTHER');
    ns.run(bin, '-w', '-t', 'nat', '-A', 'OUTPUT', '-o', 'lo', '-p', 'tcp', '--dport', '2', '-j', 'RETURN');
    ns.run(bin, '-w', '-t', 'mangle', '-A', 'OUTPUT', '-p', 'udp', '--dport', '3', '-j', 'ACCEPT');
  }
}

/** iptables resolves group names when loading: Istio's goldens name groups this host lacks. */
function loadableHere(input: CaptureInput): CaptureInput {
  const swap = (v: string) => v.replace('java', 'daemon').replace('ftp', 'daemon');
  return { ...input, ownerGroupsInclude: swap(input.ownerGroupsInclude), ownerGroupsExclude: swap(input.ownerGroupsExclude) };
}

async function state(ns: Netns, kind: BackendKind): Promise<string> {
  return `${await saveState(ns, 4, kind)}\n--- ipv6 ---\n${await saveState(ns, 6, kind)}`;
}

describe('runner in real network namespaces', { skip }, () => {
  for (const kind of skip ? [] : availableBackends()) {
    describe(`${kind} back end`, () => {
      let ns: Netns;
      let pristine = '';
      before(async () => {
        ns = createNetns('run');
        foreign(ns, kind);
        pristine = await state(ns, kind);
      });
      after(() => ns?.remove());

      for (const c of ALL_CASES) {
        it(`${c.name}: applies as its golden, re-applies identically, cleans up to the state before`, async () => {
          const rs = buildCaptureRules(resolveCaptureConfig(loadableHere(caseInput(c))));
          const opts = { exec: ns.exec, force: kind };
          const first = await applyCapture(rs, opts);
          assert.equal(first.families[0]?.backend, kind);
          const applied = await state(ns, kind);
          assert.notEqual(applied, pristine);

          const twin = createNetns('ref');
          try {
            foreign(twin, kind);
            for (const [bin, rules] of [
              [`iptables-${kind}-restore`, rs.ipv4],
              [`ip6tables-${kind}-restore`, rs.ipv6],
            ] as const) {
              if (rules.length === 0) continue;
              const r = await twin.exec(bin, ['-w', '--noflush'], renderRestore(rules));
              assert.equal(r.code, 0, r.stderr);
            }
            assert.equal(applied, await state(twin, kind), 'the runner applied exactly the golden rules');
          } finally {
            twin.remove();
          }

          const again = await applyCapture(rs, opts);
          assert.ok(again.families[0] && again.families[0].removedChains.length > 0, 'the second run replaced the first');
          assert.equal(await state(ns, kind), applied);

          const removed = await removeCapture(rs, opts);
          assert.equal(removed.action, 'cleanup');
          assert.equal(await state(ns, kind), pristine);
          if (rs.tproxyRoute) assert.doesNotMatch(ns.run('ip', 'rule', 'show'), /lookup 133/);
        });
      }

      it('TPROXY adds its policy routing once, however often applied', async () => {
        const c = ALL_CASES.find((x) => x.name === 'inbound-ports-wildcard-tproxy');
        assert.ok(c);
        const rs = buildCaptureRules(resolveCaptureConfig(caseInput(c)));
        await applyCapture(rs, { exec: ns.exec, force: kind });
        await applyCapture(rs, { exec: ns.exec, force: kind });
        assert.equal(ns.run('ip', 'rule', 'show').match(/fwmark 0x539 lookup 133/g)?.length, 1);
        assert.match(ns.run('ip', 'route', 'show', 'table', '133'), /local default dev lo/);
        await removeCapture(rs, { exec: ns.exec, force: kind });
        assert.doesNotMatch(ns.run('ip', 'rule', 'show'), /lookup 133/);
        assert.equal(await state(ns, kind), pristine);
      });

      it('a failure in a later table rolls back the tables already committed', async () => {
        const rs: RuleSet = {
          ipv4: [
            { table: 'mangle', chain: 'ISTIO_DIVERT', spec: ['-j', 'ACCEPT'] },
            { table: 'mangle', chain: 'PREROUTING', spec: ['-p', 'tcp', '-j', 'ISTIO_DIVERT'] },
            { table: 'nat', chain: 'OUTPUT', spec: ['-m', 'nosuchmatch', '-j', 'RETURN'] },
          ],
          ipv6: [],
          enableIPv6: false,
        };
        await assert.rejects(applyCapture(rs, { exec: ns.exec, force: kind }), /iptables-.*restore.*failed/);
        assert.equal(await state(ns, kind), pristine);
      });
    });
  }

  it('detects the back end: nft on a clean namespace, legacy where legacy rules exist, ours first', async () => {
    const kinds = availableBackends();
    if (!kinds.includes('nft') || !kinds.includes('legacy')) return;
    const ns = createNetns('det');
    try {
      assert.equal((await detectBackend(ns.exec, 4)).kind, 'nft');
      ns.run('iptables-legacy', '-w', '-t', 'filter', '-A', 'INPUT', '-p', 'tcp', '--dport', '5', '-j', 'ACCEPT');
      assert.equal((await detectBackend(ns.exec, 4)).kind, 'legacy');
      assert.equal((await detectBackend(ns.exec, 6)).kind, 'nft', 'per family: ip6tables-legacy has no rules');
      ns.run('iptables-nft', '-t', 'nat', '-N', 'ISTIO_OUTPUT');
      assert.equal((await detectBackend(ns.exec, 4)).kind, 'nft', 'where our chains are wins');
      assert.equal((await detectBackend(ns.exec, 4, 'legacy')).kind, 'legacy', 'forced');
    } finally {
      ns.remove();
    }
  });
});
