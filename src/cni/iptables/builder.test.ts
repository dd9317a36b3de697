import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../../test/support/paths.js';
import { assertGoldenText } from '../../../test/support/cni/golden-text.js';
import { buildCaptureRules } from './builder.js';
import { ISTIO_IPTABLES_DEFAULTS, resolveCaptureConfig, type CaptureInput } from './config.js';
import { ALL_CASES, caseInput } from './golden-cases.js';
import { renderRestore, renderRuleSet, ruleLine } from './restore.js';

const GOLDEN_DIR = join(REPO_ROOT, 'testdata', 'iptables');

function build(input: Partial<CaptureInput>) {
  return buildCaptureRules(resolveCaptureConfig({ ...ISTIO_IPTABLES_DEFAULTS, ...input }));
}

describe('capture rule builder: goldens (one per option set)', () => {
  for (const c of ALL_CASES) {
    it(c.name, () => {
      const rs = buildCaptureRules(resolveCaptureConfig(caseInput(c)));
      assertGoldenText(join(GOLDEN_DIR, `${c.name}.golden`), renderRuleSet(rs));
    });
  }
});

describe('capture rule builder: behaviour', () => {
  it('renders tables sorted, chains declared before rules, and jump-only chains declared too', () => {
    const text = renderRestore(build({ dropInvalid: true, redirectDns: true, captureAllDns: true }).ipv4);
    const tables = [...text.matchAll(/^\* (\w+)$/gm)].map((m) => m[1]);
    assert.deepEqual(tables, ['mangle', 'nat', 'raw']);
    const nat = text.slice(text.indexOf('* nat'), text.indexOf('* raw'));
    const firstRule = nat.search(/^-[AI] /m);
    for (const chain of ['ISTIO_INBOUND', 'ISTIO_REDIRECT', 'ISTIO_IN_REDIRECT', 'ISTIO_OUTPUT', 'ISTIO_OUTPUT_DNS']) {
      const decl = nat.indexOf(`-N ${chain}\n`);
      assert.ok(decl >= 0 && decl < firstRule, `${chain} declared before the first nat rule`);
    }
    // raw's ISTIO_INBOUND is only jumped to from PREROUTING before it gets rules: still declared once.
    assert.equal(text.match(/^-N ISTIO_INBOUND$/gm)?.length, 2, 'declared once in nat and once in raw');
  });

  it('inbound: no capture with -b "", only listed ports with a list, all but -d ports with *', () => {
    const none = build({ inboundPorts: '' }).ipv4.map(ruleLine);
    assert.ok(!none.some((l) => l.includes('-j ISTIO_IN_REDIRECT') && l.startsWith('-A ISTIO_INBOUND')));
    assert.ok(!none.includes('-A PREROUTING -p tcp -j ISTIO_INBOUND'));
    const list = build({ inboundPorts: '8080,9090' }).ipv4.map(ruleLine);
    assert.ok(list.includes('-A ISTIO_INBOUND -p tcp --dport 8080 -j ISTIO_IN_REDIRECT'));
    assert.ok(list.includes('-A ISTIO_INBOUND -p tcp --dport 9090 -j ISTIO_IN_REDIRECT'));
    const all = build({ inboundPorts: '*', inboundPortsExclude: '15090,15021' }).ipv4.map(ruleLine);
    const excl = all.indexOf('-A ISTIO_INBOUND -p tcp --dport 15090 -j RETURN');
    const catchAll = all.indexOf('-A ISTIO_INBOUND -p tcp -j ISTIO_IN_REDIRECT');
    assert.ok(excl >= 0 && catchAll > excl, 'exclusions come before the catch-all redirect');
  });

  it('outbound: excluded CIDRs and loopback RETURN before the include that redirects', () => {
    const lines = build({ outboundIpRanges: '*', outboundIpRangesExclude: '10.1.0.0/16' }).ipv4.map(ruleLine);
    const ret = lines.indexOf('-A ISTIO_OUTPUT -d 10.1.0.0/16 -j RETURN');
    const redirect = lines.indexOf('-A ISTIO_OUTPUT -j ISTIO_REDIRECT');
    assert.ok(ret >= 0 && redirect > ret);
    assert.ok(lines.indexOf('-A ISTIO_OUTPUT -m owner --uid-owner 1337 -j RETURN') < redirect);
  });

  it('splits CIDRs by family and leaves IPv6 empty unless enabled', () => {
    const v4only = build({ outboundIpRanges: '10.0.0.0/8,fd00::/8' });
    assert.equal(v4only.ipv6.length, 0);
    assert.ok(!v4only.ipv4.map(ruleLine).some((l) => l.includes('fd00::/8')));
    const dual = build({ outboundIpRanges: '10.0.0.0/8,FD00:0:0::/8', enableIPv6: true });
    assert.ok(dual.ipv6.map(ruleLine).includes('-A ISTIO_OUTPUT -d fd00::/8 -j ISTIO_REDIRECT'), 'IPv6 printed canonically');
    assert.ok(!dual.ipv6.map(ruleLine).some((l) => l.includes('10.0.0.0/8')));
  });

  it('DNS: --redirect-dns without servers or --capture-all-dns captures nothing (as Istio)', () => {
    const text = renderRuleSet(build({ redirectDns: true }));
    assert.ok(!text.includes('15053'));
    const all = build({ redirectDns: true, captureAllDns: true }).ipv4.map(ruleLine);
    assert.ok(all.includes('-A ISTIO_OUTPUT_DNS -p udp --dport 53 -j REDIRECT --to-port 15053'));
    assert.ok(all.includes('-A ISTIO_OUTPUT_DNS -p tcp --dport 53 -j REDIRECT --to-ports 15053'));
  });

  it('TPROXY needs policy routing only when inbound is captured', () => {
    assert.deepEqual(build({ interceptionMode: 'TPROXY', inboundPorts: '*' }).tproxyRoute, { mark: 1337, table: 133 });
    assert.equal(build({ interceptionMode: 'TPROXY' }).tproxyRoute, undefined);
    assert.equal(build({ inboundPorts: '*' }).tproxyRoute, undefined);
  });
});
