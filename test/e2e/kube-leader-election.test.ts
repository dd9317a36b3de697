/**
 * The Lease elector (src/leader) and the istio-ca-root-cert publisher
 * (src/security/kube/root-cert-publisher.ts) in this process, against a real API server:
 *
 * - five candidates racing for a new lease: exactly one leads, and it is the holder;
 * - an update from a stale resourceVersion is refused (409), so a lost race cannot overwrite;
 * - a leader whose lease is taken by someone else stops its work within the renew deadline and does
 *   not take the lease back while the other holder's lease is valid;
 * - stop() releases the lease (empty holder, 1 s);
 * - the publisher: ConfigMap in every selected namespace with istiod's label, new namespaces get
 *   one, an edited one is corrected (other keys kept), a deleted one recreated, a root change
 *   rewrites all, kube-public and namespaces outside discoverySelectors are left alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { startLeaderElection, type LeaderElection } from '../../src/leader/leader-election.js';
import { LeaseLock } from '../../src/leader/lease-lock.js';
import { RootCertPublisher } from '../../src/security/kube/root-cert-publisher.js';
import { createLogger } from '../../src/util/log.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();
const log = createLogger({ level: process.env.MESHPILOT_TEST_LOGS === '1' ? 'debug' : 'error' });
const TIMING = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 300 };

let cluster: KubeCluster;
let core: CoreV1Api;
let leases: CoordinationV1Api;
let ns: string;
const electors: LeaderElection[] = [];

function elector(name: string, identity: string, work: { started: number; stopped: number; signal?: AbortSignal }): LeaderElection {
  const e = startLeaderElection({
    kubeConfig: cluster.kubeConfig,
    namespace: ns,
    name,
    identity,
    ...TIMING,
    logger: log,
    onStartedLeading: (signal) => {
      work.started++;
      work.signal = signal;
      return new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          work.stopped++;
          resolve();
        }),
      );
    },
  });
  electors.push(e);
  return e;
}

const leaseSpec = async (name: string): Promise<{ holder: string; duration: number; transitions: number }> => {
  const l = await leases.readNamespacedLease({ namespace: ns, name });
  return { holder: l.spec?.holderIdentity ?? '', duration: l.spec?.leaseDurationSeconds ?? 0, transitions: l.spec?.leaseTransitions ?? 0 };
};

describe('Lease leader election and the root-cert publisher (in process, real API server)', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      leases = cluster.clientNode.makeApiClient(CoordinationV1Api);
      ns = await cluster.namespace('le');
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await Promise.all(electors.map((e) => e.stop()));
    await cluster?.stop();
  });

  it('five candidates racing for a new lease: exactly one leads, and it holds the Lease', async () => {
    const works = Array.from({ length: 5 }, () => ({ started: 0, stopped: 0 }));
    const es = works.map((w, i) => elector('race', `cand-${i}`, w));
    await waitFor(() => es.some((e) => e.isLeader()), { timeoutMs: 5_000, description: 'a leader' });
    // Several retry periods: the losers keep trying and must keep losing.
    for (let round = 0; round < 5; round++) {
      await new Promise((r) => setTimeout(r, TIMING.retryPeriodMs));
      const leaders = es.map((e, i) => (e.isLeader() ? `cand-${i}` : '')).filter(Boolean);
      assert.equal(leaders.length, 1, `leaders: ${leaders.join(',')}`);
      assert.equal((await leaseSpec('race')).holder, leaders[0]);
    }
    assert.deepEqual(works.map((w) => w.started).sort(), [0, 0, 0, 0, 1]);
    assert.equal((await leaseSpec('race')).transitions, 0);
  });

  it('an update from a stale resourceVersion is refused with a conflict', async () => {
    const lock = new LeaseLock(cluster.kubeConfig, ns, 'stale');
    const created = await lock.create({
      holderIdentity: 'x',
      leaseDurationSeconds: 5,
      acquireTime: new Date(),
      renewTime: new Date(),
      leaseTransitions: 0,
    });
    assert.ok(created.ok);
    const first = await lock.update(created.lease.resourceVersion, {
      holderIdentity: 'y',
      leaseDurationSeconds: 5,
      acquireTime: new Date(),
      renewTime: new Date(),
      leaseTransitions: 1,
    });
    assert.ok(first.ok);
    const stale = await lock.update(created.lease.resourceVersion, {
      holderIdentity: 'z',
      leaseDurationSeconds: 5,
      acquireTime: new Date(),
      renewTime: new Date(),
      leaseTransitions: 1,
    });
    assert.deepEqual(stale.ok ? 'written' : { conflict: stale.conflict, status: stale.status }, { conflict: true, status: 409 });
    assert.equal((await lock.get())?.record.holderIdentity, 'y');
  });

  it("a leader whose lease is taken stops its work within the renew deadline and waits for the intruder's lease to expire", async () => {
    const work = { started: 0, stopped: 0 };
    const e = elector('stolen', 'victim', work);
    await waitFor(() => e.isLeader(), { timeoutMs: 5_000, description: 'victim leading' });
    const l = await leases.readNamespacedLease({ namespace: ns, name: 'stolen' });
    const stolenAt = Date.now();
    await leases.replaceNamespacedLease({
      namespace: ns,
      name: 'stolen',
      body: { ...l, spec: { ...l.spec, holderIdentity: 'intruder', leaseDurationSeconds: 30 } },
    });
    await waitFor(() => work.stopped === 1, {
      timeoutMs: TIMING.renewDeadlineMs + TIMING.retryPeriodMs * 3,
      intervalMs: 20,
      description: 'the victim to stop its work',
    });
    const stoppedAfter = Date.now() - stolenAt;
    assert.ok(stoppedAfter <= TIMING.retryPeriodMs + TIMING.renewDeadlineMs + 500, `stopped after ${stoppedAfter} ms`);
    assert.equal(e.isLeader(), false);
    await new Promise((r) => setTimeout(r, 2 * TIMING.leaseDurationMs));
    assert.equal((await leaseSpec('stolen')).holder, 'intruder', "the intruder's 30 s lease is respected");
    assert.equal(work.started, 1);
  });

  it('stop() ends the work and releases the lease (empty holder, 1 s)', async () => {
    const work = { started: 0, stopped: 0 };
    const e = elector('release', 'leaving', work);
    await waitFor(() => e.isLeader(), { timeoutMs: 5_000, description: 'leading' });
    await e.stop();
    assert.equal(work.stopped, 1);
    assert.deepEqual(await leaseSpec('release'), { holder: '', duration: 1, transitions: 0 });
    // A newcomer takes it at once (transition counted), not after an expiry.
    const next = elector('release', 'next', { started: 0, stopped: 0 });
    const t0 = Date.now();
    await waitFor(() => next.isLeader(), { timeoutMs: 2_000, intervalMs: 20, description: 'the newcomer leading' });
    assert.ok(Date.now() - t0 < TIMING.leaseDurationMs);
    assert.equal((await leaseSpec('release')).transitions, 1);
  });

  it('publishes istio-ca-root-cert: selected namespaces only, recreated, corrected, rewritten on a root change', async () => {
    const selected = await cluster.namespace('pub-a', { mesh: 'yes' });
    const other = await cluster.namespace('pub-off');
    await core.createNamespace({ body: { metadata: { name: 'kube-public', labels: { mesh: 'yes' } } } }).catch(() => undefined);
    let pem = '-----BEGIN CERTIFICATE-----\nMIIBroot1\n-----END CERTIFICATE-----\n';
    const listeners = new Set<() => void>();
    const publisher = new RootCertPublisher({
      kubeConfig: cluster.kubeConfig,
      logger: log,
      trustBundlePem: () => pem,
      onRootsChange: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
      discoverySelectors: [{ matchLabels: { mesh: 'yes' } }],
    });
    const ctrl = new AbortController();
    const running = publisher.run(ctrl.signal);
    const read = (namespace: string): Promise<{ data: Record<string, string>; labels: Record<string, string> } | undefined> =>
      core.readNamespacedConfigMap({ namespace, name: 'istio-ca-root-cert' }).then(
        (c) => ({ data: c.data ?? {}, labels: c.metadata?.labels ?? {} }),
        () => undefined,
      );
    try {
      const first = await waitFor(() => read(selected), { timeoutMs: 10_000, description: 'the ConfigMap in the selected namespace' });
      assert.deepEqual(first, { data: { 'root-cert.pem': pem }, labels: { 'istio.io/config': 'true' } });
      // A namespace created later, then selected by a label edit.
      const late = await cluster.namespace('pub-late');
      await core.patchNamespace({ name: late, body: [{ op: 'add', path: '/metadata/labels', value: { mesh: 'yes' } }] });
      await waitFor(() => read(late), { timeoutMs: 10_000, description: 'the ConfigMap in a namespace selected later' });
      // Edited: the key is corrected, another key stays.
      const cm = await core.readNamespacedConfigMap({ namespace: selected, name: 'istio-ca-root-cert' });
      await core.replaceNamespacedConfigMap({
        namespace: selected,
        name: 'istio-ca-root-cert',
        body: { ...cm, data: { 'root-cert.pem': 'tampered', extra: 'kept' } },
      });
      await waitFor(async () => (await read(selected))?.data['root-cert.pem'] === pem, {
        timeoutMs: 10_000,
        description: 'the edited ConfigMap corrected',
      });
      assert.equal((await read(selected))?.data.extra, 'kept');
      // Deleted: recreated.
      await core.deleteNamespacedConfigMap({ namespace: selected, name: 'istio-ca-root-cert' });
      await waitFor(() => read(selected), { timeoutMs: 10_000, description: 'the deleted ConfigMap recreated' });
      // Root change: every ConfigMap rewritten.
      pem = '-----BEGIN CERTIFICATE-----\nMIIBroot2\n-----END CERTIFICATE-----\n';
      for (const l of listeners) l();
      await waitFor(
        async () => (await read(selected))?.data['root-cert.pem'] === pem && (await read(late))?.data['root-cert.pem'] === pem,
        { timeoutMs: 10_000, description: 'both ConfigMaps carrying the new root' },
      );
      // Left alone: outside the selectors, and kube-public even when selected.
      assert.equal(await read(other), undefined);
      assert.equal(await read('kube-public'), undefined);
      assert.equal(publisher.stats().failed, 0);
    } finally {
      ctrl.abort();
      await running;
    }
  });
});
