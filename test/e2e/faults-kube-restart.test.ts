/**
 * Against a real kube-apiserver + etcd (../shared/kube): meshpilot watching
 * through a relay loses no event across a watch gap (connection cut: resumed from the
 * resourceVersion), an API server restart during the gap (410 Gone → list again) and writes made
 * right after the restart and right after the reconnect — its store ends equal to the API
 * (test/support/faults/kube-restart.ts; also the soak part `kube-restart`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { kubeRestartScenario } from '../support/faults/kube-restart.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';

const skip = kubeSkipReason();
let cluster: KubeCluster | undefined;

describe('faults: Kubernetes API server restart mid-watch', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await cluster?.stop();
  });

  it('writes during a cut watch, right after an API server restart and after the reconnect all reach meshpilot', async () => {
    assert.ok(cluster);
    const r = await kubeRestartScenario(cluster, { perRound: 5 });
    process.stderr.write(`# kube restart: ${r.notes}\n`);
    assert.equal(r.failure, undefined, r.failure);
    assert.equal(r.lost, 0);
  });
});
