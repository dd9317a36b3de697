import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../test/support/paths.js';
import type { Exec } from './exec.js';
import { runIptablesCommand, type IptablesCommandDeps } from './iptables-command.js';

/** The command's wiring with a scripted environment (real namespaces: test/e2e/capture-netns.test.ts). */

function harness(extra: Partial<IptablesCommandDeps> = {}) {
  const calls: string[] = [];
  let out = '';
  let err = '';
  const exec: Exec = (cmd, args) => {
    calls.push([cmd, ...args].join(' '));
    return Promise.resolve({ code: 0, stdout: '', stderr: '' }); // empty saves: a clean namespace, every command succeeds
  };
  const deps: IptablesCommandDeps = {
    exec,
    stdout: (s) => (out += s),
    stderr: (s) => (err += s),
    addresses: () => Promise.resolve([{ address: '10.1.0.5', family: 4 as const }]),
    ...extra,
  };
  return { deps, calls, out: () => out, err: () => err };
}

const golden = (name: string) => readFileSync(join(REPO_ROOT, 'testdata', 'iptables', `${name}.golden`), 'utf8');
const ENV = { ENVOY_USER: 'no-such-user-here' };

describe('meshpilot iptables', () => {
  it('--dry-run prints the restore input and runs nothing', async () => {
    const h = harness();
    const code = await runIptablesCommand(
      ['-p', '15001', '-z', '15006', '-u', '1337', '-m', 'REDIRECT', '-i', '*', '-x', '', '-b', '*', '-d', '15090,15021,15020', '-n'],
      ENV,
      h.deps,
    );
    assert.equal(code, 0, h.err());
    assert.equal(h.out(), golden('injection-defaults'));
    assert.deepEqual(h.calls, []);
  });

  it('defaults -d to 15090,15021,15020 and -u to ENVOY_USER’s uid or 1337', async () => {
    const h = harness();
    assert.equal(await runIptablesCommand(['-i', '*', '-b', '*', '--dry-run'], ENV, h.deps), 0);
    assert.equal(h.out(), golden('injection-defaults'));
  });

  it('IPv6 follows the pod’s addresses; --dual-stack counts any IPv6 address', async () => {
    const addresses = () =>
      Promise.resolve([
        { address: '10.1.0.5', family: 4 as const },
        { address: 'fd00::5', family: 6 as const },
      ]);
    const single = harness({ addresses });
    await runIptablesCommand(['-n'], ENV, single.deps);
    assert.doesNotMatch(single.out(), /# IPv6/);
    const dual = harness({ addresses });
    await runIptablesCommand(['-n', '--dual-stack'], ENV, dual.deps);
    assert.match(dual.out(), /# IPv6: ip6tables-restore --noflush\n\* nat\n/);
  });

  it('--redirect-dns reads resolv.conf unless --capture-all-dns', async () => {
    const h = harness({ resolvConf: () => Promise.resolve(['10.96.0.10']) });
    await runIptablesCommand(['-n', '--redirect-dns'], ENV, h.deps);
    assert.match(h.out(), /-A ISTIO_OUTPUT_DNS -p udp --dport 53 -d 10\.96\.0\.10\/32 -j REDIRECT --to-port 15053/);
    let read = false;
    const all = harness({
      resolvConf: () => {
        read = true;
        return Promise.resolve([]);
      },
    });
    await runIptablesCommand(['-n', '--redirect-dns', '--capture-all-dns'], ENV, all.deps);
    assert.equal(read, false);
    assert.match(all.out(), /-A ISTIO_OUTPUT_DNS -p udp --dport 53 -j REDIRECT --to-port 15053/);
  });

  it('a bad value exits 64 naming the option, and runs no iptables command', async () => {
    for (const [argv, env, want] of [
      [['-x', '1.2.3.4/99'], {}, /invalid -x\/--istio-service-exclude-cidr value "1\.2\.3\.4\/99"/],
      [['-z', '99999'], {}, /invalid -z\/--inbound-capture-port value "99999": port 99999 is out of range/],
      [[], { ISTIO_INBOUND_INTERCEPTION_MODE: 'MAGIC' }, /invalid ISTIO_INBOUND_INTERCEPTION_MODE \(env\) value "MAGIC"/],
      [['--force-iptables-binary', 'xt'], {}, /FORCE_IPTABLES_BINARY value "xt": must be legacy or nft/],
      [['--nope'], {}, /unknown flag --nope/],
      [['--run-validation', '--probe-timeout', '5'], {}, /invalid --probe-timeout \/ PROBE_TIMEOUT: "5" is not a positive duration/],
      [['--run-validation'], { PROBE_TIMEOUT: '0s' }, /invalid --probe-timeout \/ PROBE_TIMEOUT: "0s" is not a positive duration/],
      [
        ['--run-validation', '--iptables-probe-port', 'x'],
        {},
        /invalid --iptables-probe-port \/ IPTABLES_PROBE_PORT: "x" is not a port number/,
      ],
    ] as const) {
      const h = harness();
      assert.equal(await runIptablesCommand([...argv], { ...ENV, ...env }, h.deps), 64, argv.join(' '));
      assert.match(h.err(), want);
      assert.deepEqual(h.calls, []);
    }
  });

  it('applies through the runner and reports what it did', async () => {
    const h = harness();
    assert.equal(await runIptablesCommand(['-i', '*'], ENV, h.deps), 0, h.err());
    assert.match(
      h.out(),
      /^meshpilot iptables: applied\nipv4 \(nft, iptables-nft-restore\): removed 0 chains, 0 jump\/built-in rules; added 4 chains, 13 rules\n$/,
    );
    assert.ok(h.calls.includes('iptables-nft-restore --noflush'));
  });

  it('--help prints usage listing flags with their env names', async () => {
    const h = harness();
    assert.equal(await runIptablesCommand(['--help'], ENV, h.deps), 0);
    assert.match(h.out(), /-x, --istio-service-exclude-cidr CIDRS +ISTIO_SERVICE_EXCLUDE_CIDR/);
  });
});
