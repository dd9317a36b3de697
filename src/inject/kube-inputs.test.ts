import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeSidecarsFor } from './kube-inputs.js';

describe("ENABLE_NATIVE_SIDECARS (istiod's DetectNativeSidecar)", () => {
  const nodes = [
    { name: 'old', kubeletVersion: 'v1.32.4' },
    { name: 'new', kubeletVersion: 'v1.33.1-gke.100' },
  ];
  it('true and false are unconditional', () => {
    assert.equal(nativeSidecarsFor('true', nodes, 'old'), true);
    assert.equal(nativeSidecarsFor('false', nodes, 'new'), false);
  });
  it("auto: the pod's node when it is known, else every node must run kubelet 1.33 or newer", () => {
    assert.equal(nativeSidecarsFor('auto', nodes, 'new'), true);
    assert.equal(nativeSidecarsFor('auto', nodes, 'old'), false);
    assert.equal(nativeSidecarsFor('auto', nodes, ''), false);
    assert.equal(nativeSidecarsFor('auto', nodes.slice(1), ''), true);
    assert.equal(nativeSidecarsFor('auto', nodes, 'gone'), false, 'an unknown node falls back to all nodes');
    assert.equal(nativeSidecarsFor('auto', [], ''), true, 'no nodes: nothing says no (as istiod)');
    assert.equal(nativeSidecarsFor('auto', [{ name: 'x', kubeletVersion: 'garbage' }], ''), false);
    assert.equal(nativeSidecarsFor('auto', [{ name: 'x', kubeletVersion: 'v2.0.0' }], ''), true);
  });
});
