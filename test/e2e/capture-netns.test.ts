import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BackendKind } from '../../src/cni/backend.js';
import { commandRunner } from '../../src/cni/exec.js';
import { buildCaptureRules } from '../../src/cni/iptables/builder.js';
import { resolveCaptureConfig } from '../../src/cni/iptables/config.js';
import { EXTRA_CASES, caseInput } from '../../src/cni/iptables/golden-cases.js';
import { applyCapture, removeCapture } from '../../src/cni/runner.js';
import { availableBackends, connect, createNetns, netnsSkipReason, saveState, type Netns } from '../support/cni/netns.js';
import { startListeners, tcpConnect, udpQuery, type Listeners } from '../support/cni/traffic.js';
import { trackChild } from '../support/cleanup.js';
import { REPO_ROOT } from '../support/paths.js';

/** The options the golden file netns-e2e records: the same rules this test sends traffic through. */
const NETNS_CASE = EXTRA_CASES.find((c) => c.name === 'netns-e2e')!;

/**
 * Traffic capture proven with real iptables and real packets. Two namespaces joined by a veth
 * pair, every address inside them: "app" (the pod: 10.250.0.1, fd00:250::1) and "peer" (another
 * pod: 10.250.0.2, fd00:250::2, and 10.250.1.2 for the excluded-CIDR case). Both run listeners
 * that answer with their tag, so a client learns which socket got its connection: the peer's
 * real one (not captured) or the app's 15001/15006/15053 (captured). The app's listeners run as
 * uid/gid 1337, as the proxy does (DNS conntrack zones depend on it).
 */

const skip = netnsSkipReason();
const PROXY_UID = 1337;
/** The options of testdata/iptables/netns-e2e.golden, as the init container would be given them. */
const FLAGS = ['-i', '*', '-b', '*', '-x', '10.250.1.2/32', '-o', '9000', '--redirect-dns', '--capture-all-dns', '--dual-stack'];
const GOLDEN = join(REPO_ROOT, 'testdata', 'iptables', 'netns-e2e.golden');

/** `meshpilot iptables FLAGS` as an init container runs it: a process inside the pod's namespace. */
function initContainer(ns: Netns, flags: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string }> {
  const script = `import { runIptablesCommand } from ${JSON.stringify(join(REPO_ROOT, 'src/cni/iptables-command.ts'))};
process.exitCode = await runIptablesCommand(process.argv.slice(1), process.env);`;
  return new Promise((resolve) => {
    const child = spawn(
      'ip',
      ['netns', 'exec', ns.name, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script, '--', ...flags],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    trackChild(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('exit', (code) => resolve({ code: code ?? 128, out }));
  });
}

async function bothFamilies(ns: Netns, kind: BackendKind): Promise<string> {
  return `${await saveState(ns, 4, kind)}\n--- ipv6 ---\n${await saveState(ns, 6, kind)}`;
}

/** Someone else's rules in the pod (e.g. the primary plugin's): must survive apply and cleanup. */
function addForeignRules(ns: Netns, kind: BackendKind): void {
  for (const bin of [`iptables-${kind}`, `ip6tables-${kind}`]) {
    ns.run(bin, '-w', '-t', 'nat', '-N', 'FOREIGN');
    ns.run(bin, '-w', '-t', 'nat', '-A', 'OUTPUT', '-p', 'udp', '--dport', '9999', '-j', 'FOREIGN');
    ns.run(bin, '-w', '-t', 'mangle', '-A', 'PREROUTING', '-p', 'tcp', '--dport', '9999', '-j', 'ACCEPT');
  }
}

describe('traffic capture in real network namespaces', { skip }, () => {
  const backends = skip ? [] : availableBackends();
  it('has iptables (Debian package iptables: both iptables-nft and iptables-legacy)', () => {
    assert.ok(backends.length > 0, 'no iptables-nft/iptables-legacy found: apt-get install -y iptables');
  });

  for (const kind of backends) {
    describe(`${kind} back end`, () => {
      let app: Netns;
      let peer: Netns;
      let appListeners: Listeners;
      let peerListeners: Listeners;
      let pristine = '';
      let applied = '';

      before(async () => {
        app = createNetns('app');
        peer = createNetns('peer');
        connect(app, ['10.250.0.1/30', 'fd00:250::1/64'], peer, ['10.250.0.2/30', 'fd00:250::2/64']);
        peer.run('ip', 'addr', 'add', '10.250.1.2/32', 'dev', 'lo');
        app.run('ip', 'route', 'add', '10.250.1.2/32', 'via', '10.250.0.2');
        addForeignRules(app, kind);
        pristine = await bothFamilies(app, kind);
        peerListeners = await startListeners(peer, [
          'tcp,0.0.0.0,8000,peer-8000',
          'tcp,::,8000,peer-8000',
          'tcp,0.0.0.0,9000,peer-9000',
          'udp,10.250.0.2,53,peer-dns',
          'udp,10.250.1.2,53,peer-dns-b',
        ]);
        appListeners = await startListeners(
          app,
          [
            'tcp,0.0.0.0,15001,app-15001',
            'tcp,::,15001,app-15001',
            'tcp,0.0.0.0,15006,app-15006',
            'tcp,0.0.0.0,8080,app-8080',
            'tcp,0.0.0.0,15021,app-15021',
            'udp,127.0.0.1,15053,app-dns',
          ],
          PROXY_UID,
        );
      });
      after(async () => {
        await appListeners?.stop();
        await peerListeners?.stop();
        app?.remove();
        peer?.remove();
      });

      it('without rules, connections reach the address they were sent to', async () => {
        assert.equal(await tcpConnect(app, '10.250.0.2', 8000), 'peer-8000');
        assert.equal(await tcpConnect(peer, '10.250.0.1', 8080), 'app-8080');
        assert.equal(await udpQuery(app, '10.250.0.2', 53), 'peer-dns from 10.250.0.2:53');
      });

      it('init-container mode: meshpilot iptables programs the namespace it runs in', async () => {
        const r = await initContainer(app, FLAGS);
        assert.equal(r.code, 0, r.out);
        assert.match(r.out, new RegExp(`ipv4 \\(${kind}, iptables-${kind}-restore\\)`), 'detected the back end holding the rules');
        applied = await bothFamilies(app, kind);
        assert.match(applied, /^:ISTIO_OUTPUT - *$/m);
        assert.match(applied, /^-A OUTPUT -p udp -m udp --dport 9999 -j FOREIGN$/m, 'foreign rule kept');
      });

      it('outbound TCP from the app reaches 15001 in the app, which reads the original destination', async () => {
        const before4 = appListeners.seen.length;
        assert.equal(await tcpConnect(app, '10.250.0.2', 8000), 'app-15001');
        assert.equal(await tcpConnect(app, 'fd00:250::2', 8000), 'app-15001');
        const [v4, v6] = appListeners.seen.slice(before4);
        assert.deepEqual([v4?.local, v4?.origDst, v4?.peer.split(':')[0]], ['127.0.0.1:15001', '10.250.0.2:8000', '10.250.0.1']);
        assert.deepEqual([v6?.local, v6?.origDst], ['[::1]:15001', '[fd00:250::2]:8000']);
      });

      it('the proxy (uid 1337) is not redirected', async () => {
        assert.equal(await tcpConnect(app, '10.250.0.2', 8000, PROXY_UID), 'peer-8000');
        assert.equal(await tcpConnect(app, 'fd00:250::2', 8000, PROXY_UID), 'peer-8000');
      });

      it('an excluded outbound port (-o) and an excluded CIDR (-x) bypass the proxy', async () => {
        assert.equal(await tcpConnect(app, '10.250.0.2', 9000), 'peer-9000');
        const n = peerListeners.seen.length;
        assert.equal(await tcpConnect(app, '10.250.1.2', 8000), 'peer-8000');
        assert.equal(peerListeners.seen[n]?.local, '10.250.1.2:8000');
      });

      it('inbound to the app port reaches 15006; an excluded inbound port (-d 15021) reaches the app', async () => {
        const n = appListeners.seen.length;
        assert.equal(await tcpConnect(peer, '10.250.0.1', 8080), 'app-15006');
        assert.deepEqual([appListeners.seen[n]?.origDst, appListeners.seen[n]?.peer.split(':')[0]], ['10.250.0.1:8080', '10.250.0.2']);
        assert.equal(await tcpConnect(peer, '10.250.0.1', 15021), 'app-15021');
      });

      it('DNS capture: UDP 53 is answered by 15053, the reply coming from the original server', async () => {
        assert.equal(await udpQuery(app, '10.250.0.2', 53), 'app-dns from 10.250.0.2:53');
        // The proxy's own upstream queries are not captured.
        assert.equal(await udpQuery(app, '10.250.0.2', 53, PROXY_UID), 'peer-dns from 10.250.0.2:53');
      });

      it('re-running changes nothing (same iptables-save)', async () => {
        const r = await initContainer(app, FLAGS);
        assert.equal(r.code, 0, r.out);
        assert.equal(await bothFamilies(app, kind), applied);
        assert.equal(await tcpConnect(app, '10.250.0.2', 8000), 'app-15001');
      });

      it('what was applied is exactly the golden rule set (loaded by hand into a twin namespace)', async () => {
        const dry = await initContainer(app, [...FLAGS, '--dry-run']);
        assert.equal(dry.code, 0, dry.out);
        assert.equal(dry.out, readFileSync(GOLDEN, 'utf8'), 'dry-run prints the golden');
        const twin = createNetns('twin');
        try {
          addForeignRules(twin, kind);
          const [v4, v6] = dry.out.split('# IPv6: ip6tables-restore --noflush\n');
          for (const [bin, text] of [
            [`iptables-${kind}-restore`, v4 ?? ''],
            [`ip6tables-${kind}-restore`, v6 ?? ''],
          ] as const) {
            const r = await twin.exec(bin, ['-w', '--noflush'], text);
            assert.equal(r.code, 0, r.stderr);
          }
          assert.equal(await bothFamilies(twin, kind), applied);
        } finally {
          twin.remove();
        }
      });

      it('cleanup-only removes exactly our chains and jumps; the library API gives the same state as the command', async () => {
        const r = await initContainer(app, [...FLAGS, '--cleanup-only']);
        assert.equal(r.code, 0, r.out);
        assert.equal(await bothFamilies(app, kind), pristine);
        assert.equal(await tcpConnect(app, '10.250.0.2', 8000), 'peer-8000', 'no longer captured');

        const input = caseInput(NETNS_CASE);
        const rs = buildCaptureRules(resolveCaptureConfig(input));
        const report = await applyCapture(rs, { exec: commandRunner({ netns: app.name }) });
        assert.deepEqual(
          report.families.map((f) => [f.family, f.backend]),
          [
            ['ipv4', kind],
            ['ipv6', kind],
          ],
        );
        assert.equal(await bothFamilies(app, kind), applied, 'library apply == init-container apply');
        const removed = await removeCapture(rs, { exec: commandRunner({ netns: app.name }) });
        assert.ok(removed.families.every((f) => f.removedChains.length > 0));
        assert.equal(await bothFamilies(app, kind), pristine);
      });

      it('DNS without --capture-all-dns captures only the resolv.conf name servers', async () => {
        app.etcFile('resolv.conf', 'nameserver 10.250.0.2\n');
        const r = await initContainer(app, ['-i', '*', '--redirect-dns']);
        assert.equal(r.code, 0, r.out);
        assert.equal(await udpQuery(app, '10.250.0.2', 53), 'app-dns from 10.250.0.2:53');
        assert.equal(await udpQuery(app, '10.250.1.2', 53), 'peer-dns-b from 10.250.1.2:53');
        assert.equal((await initContainer(app, ['-i', '*', '--redirect-dns', '--cleanup-only'])).code, 0);
        assert.equal(await bothFamilies(app, kind), pristine);
      });

      it('a bad option is rejected before anything is applied', async () => {
        for (const [flags, want] of [
          [['-i', '*', '-x', '10.0.0.0/40'], /invalid -x\/--istio-service-exclude-cidr value "10\.0\.0\.0\/40"/],
          [['-b', '80,70000'], /port 70000 is out of range/],
          [['-m', 'NAT', '-b', '*'], /must be REDIRECT or TPROXY/],
        ] as const) {
          const res = await initContainer(app, flags);
          assert.equal(res.code, 64, res.out);
          assert.match(res.out, want);
          assert.match(res.out, /nothing was changed/);
        }
        const envBad = await initContainer(app, [], { ISTIO_SERVICE_CIDR: 'not-a-cidr' });
        assert.equal(envBad.code, 64);
        assert.match(envBad.out, /invalid ISTIO_SERVICE_CIDR \(env\) value "not-a-cidr"/);
        assert.equal(await bothFamilies(app, kind), pristine);
      });
    });
  }
});
