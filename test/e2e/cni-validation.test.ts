import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { availableBackends, connect, createNetns, netnsSkipReason, saveState, type Netns } from '../support/cni/netns.js';
import { DEFAULT_INIT_ARGS } from '../support/cni/init-args.js';
import { meshpilotInNetns } from '../support/cni/meshpilot-in-netns.js';
import { startListeners } from '../support/cni/traffic.js';

/**
 * CNI mode's istio-validation init container: `meshpilot istio-iptables … --run-validation
 * --skip-rule-apply`, run as Istio's template runs it (uid/gid 1337, no NET_ADMIN needed) inside a
 * pod namespace the test makes. Without the capture rules it must fail (exit 126, Istio's message,
 * and what was tried); once the rules are in place it passes. Only loopback inside the namespace
 * is used. (Through the webhook and the CNI plugin: test/e2e/cni-webhook.test.ts.)
 */

const skip = netnsSkipReason();
const PROXY = { uid: 1337, gid: 1337 };
/** The args Istio's injection template renders for istio-init with default values. */
const INIT_ARGS = DEFAULT_INIT_ARGS;
/** …and for istio-validation (values.pilot.cni.enabled: true). */
const VALIDATION_ARGS = [...INIT_ARGS, '--run-validation', '--skip-rule-apply'];
/** Istio waits 5 s by default; the failing cases need not. */
const SHORT = { PROBE_TIMEOUT: '500ms' };

async function saves(ns: Netns): Promise<string> {
  const out: string[] = [];
  for (const kind of availableBackends()) out.push(await saveState(ns, 4, kind), await saveState(ns, 6, kind));
  return out.join('\n');
}

describe('meshpilot istio-iptables --run-validation in a real network namespace', { skip }, () => {
  let ns: Netns;
  let peer: Netns;
  before(() => {
    // The pod's address comes from a veth to a second namespace (Istio picks IPv4 or IPv6 by it).
    ns = createNetns('vld');
    peer = createNetns('vldpeer');
    connect(ns, ['10.253.0.2/24'], peer, ['10.253.0.1/24']);
  });
  after(() => {
    ns?.remove();
    peer?.remove();
  });

  it("without the capture rules: exit 126 with Istio's message and what was tried; nothing applied", async () => {
    const before = await saves(ns);
    const r = await meshpilotInNetns(ns, VALIDATION_ARGS, { ...PROXY, env: SHORT });
    assert.equal(r.code, 126, r.stdout + r.stderr);
    assert.match(r.stderr, /iptables validation failed; workload is not ready for Istio\./);
    assert.match(
      r.stderr,
      /connection\(s\) to 127\.0\.0\.6:15002 never reached 127\.0\.0\.1:15001 or 127\.0\.0\.1:15006 \(last: ECONNREFUSED\); the pod's traffic is not redirected/,
    );
    assert.match(r.stdout, /--skip-rule-apply: nothing applied/);
    assert.equal(await saves(ns), before);
  });

  it("after istio-init's command programmed the namespace, the same validation passes (uid 1337 lands on 15006); --iptables-probe-port moves the probe", async () => {
    const init = await meshpilotInNetns(ns, INIT_ARGS);
    assert.equal(init.code, 0, init.stderr);
    const r = await meshpilotInNetns(ns, [...VALIDATION_ARGS, '--iptables-probe-port', '15099'], PROXY);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /validation passed: a connection to 127\.0\.0\.6:15099 was redirected to 127\.0\.0\.1:15006/);
  });

  it("a connection that reaches someone else's listener on the capture port does not count", async () => {
    const other = await startListeners(ns, ['tcp,127.0.0.1,15006,not-the-validator']);
    try {
      const r = await meshpilotInNetns(ns, VALIDATION_ARGS, { ...PROXY, env: SHORT });
      assert.equal(r.code, 126, r.stdout + r.stderr);
      assert.match(r.stderr, /never reached 127\.0\.0\.1:15001 \(last: connected, but not to a validation listener\)/);
      assert.ok(other.seen.length > 0, 'the probe reached the other listener');
    } finally {
      await other.stop();
    }
  });
});

describe('--run-validation in an IPv6-only pod: ::1 listeners, probe to [::6]', { skip }, () => {
  let ns: Netns;
  let peer: Netns;
  before(() => {
    ns = createNetns('vld6');
    peer = createNetns('vld6peer');
    connect(ns, ['fd00:253::2/64'], peer, ['fd00:253::1/64']);
  });
  after(() => {
    ns?.remove();
    peer?.remove();
  });

  it("fails without rules, passes once istio-init's command programmed ip6tables", async () => {
    const early = await meshpilotInNetns(ns, VALIDATION_ARGS, { ...PROXY, env: SHORT });
    assert.equal(early.code, 126, early.stdout + early.stderr);
    assert.match(early.stderr, /connection\(s\) to \[::6\]:15002 never reached \[::1\]:15001 or \[::1\]:15006/);
    const init = await meshpilotInNetns(ns, INIT_ARGS);
    assert.equal(init.code, 0, init.stderr);
    const r = await meshpilotInNetns(ns, VALIDATION_ARGS, PROXY);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /validation passed: a connection to \[::6\]:15002 was redirected to \[::1\]:15006/);
  });
});
