import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { injectRequired, webhookSelects, type PolicyConfig, type PodFacts } from './policy.js';

const enabled: PolicyConfig = { policy: 'enabled', neverInjectSelector: [], alwaysInjectSelector: [] };
const disabled: PolicyConfig = { policy: 'disabled', neverInjectSelector: [], alwaysInjectSelector: [] };

function pod(over: Partial<PodFacts> = {}): PodFacts {
  return { namespace: 'shop', labels: {}, annotations: {}, hostNetwork: false, ...over };
}

describe('webhookSelects (the chart MutatingWebhookConfiguration selectors)', () => {
  const def = { revision: '' };
  // [namespace labels, pod labels, expected webhook or undefined]
  const matrix: [Record<string, string>, Record<string, string>, string | undefined][] = [
    [{ 'istio-injection': 'enabled' }, {}, 'namespace.sidecar-injector.istio.io'],
    [{ 'istio-injection': 'enabled' }, { 'sidecar.istio.io/inject': 'false' }, undefined],
    [{ 'istio-injection': 'enabled' }, { 'sidecar.istio.io/inject': 'true' }, 'namespace.sidecar-injector.istio.io'],
    [{ 'istio-injection': 'enabled' }, { 'sidecar.istio.io/inject': 'maybe' }, 'namespace.sidecar-injector.istio.io'],
    [{ 'istio-injection': 'disabled' }, {}, undefined],
    [{ 'istio-injection': 'disabled' }, { 'sidecar.istio.io/inject': 'true' }, undefined],
    [{}, {}, undefined],
    [{}, { 'sidecar.istio.io/inject': 'true' }, 'object.sidecar-injector.istio.io'],
    [{}, { 'sidecar.istio.io/inject': 'false' }, undefined],
    // istio.io/rev=default is the default revision's own name.
    [{ 'istio.io/rev': 'default' }, {}, 'rev.namespace.sidecar-injector.istio.io'],
    [{ 'istio.io/rev': 'default' }, { 'sidecar.istio.io/inject': 'false' }, undefined],
    [{ 'istio.io/rev': 'canary' }, {}, undefined],
    // Both namespace labels: the legacy istio-injection wins.
    [{ 'istio.io/rev': 'default', 'istio-injection': 'enabled' }, {}, 'namespace.sidecar-injector.istio.io'],
    [{ 'istio.io/rev': 'canary', 'istio-injection': 'enabled' }, {}, 'namespace.sidecar-injector.istio.io'],
    [{ 'istio.io/rev': 'default', 'istio-injection': 'disabled' }, {}, undefined],
    [{}, { 'istio.io/rev': 'default' }, 'rev.object.sidecar-injector.istio.io'],
    [{}, { 'istio.io/rev': 'canary', 'sidecar.istio.io/inject': 'true' }, undefined],
    [{}, { 'istio.io/rev': 'default', 'sidecar.istio.io/inject': 'false' }, undefined],
  ];
  for (const [ns, labels, want] of matrix) {
    it(`namespace ${JSON.stringify(ns)} × pod ${JSON.stringify(labels)} → ${want ?? 'not sent'}`, () => {
      assert.equal(webhookSelects('shop', ns, labels, def), want);
    });
  }

  it('a revisioned injector answers only to its revision', () => {
    const canary = { revision: 'canary' };
    assert.equal(webhookSelects('shop', { 'istio.io/rev': 'canary' }, {}, canary), 'rev.namespace.sidecar-injector.istio.io');
    assert.equal(webhookSelects('shop', {}, { 'istio.io/rev': 'canary' }, canary), 'rev.object.sidecar-injector.istio.io');
    assert.equal(webhookSelects('shop', { 'istio-injection': 'enabled' }, {}, canary), undefined);
    assert.equal(webhookSelects('shop', {}, { 'sidecar.istio.io/inject': 'true' }, canary), undefined);
    assert.equal(webhookSelects('shop', { 'istio.io/rev': 'default' }, {}, canary), undefined);
  });

  it('revision tags pointing at this revision select like the revision; the tag "default" brings the legacy selectors', () => {
    const canary = { revision: 'canary', tags: ['prod'] };
    assert.equal(webhookSelects('shop', { 'istio.io/rev': 'prod' }, {}, canary), 'rev.namespace.sidecar-injector.istio.io');
    assert.equal(webhookSelects('shop', {}, { 'istio.io/rev': 'prod' }, canary), 'rev.object.sidecar-injector.istio.io');
    assert.equal(webhookSelects('shop', { 'istio.io/rev': 'stable' }, {}, canary), undefined);
    assert.equal(webhookSelects('shop', { 'istio-injection': 'enabled' }, {}, canary), undefined);
    const defaultTag = { revision: 'canary', tags: ['default'] };
    assert.equal(webhookSelects('shop', { 'istio-injection': 'enabled' }, {}, defaultTag), 'namespace.sidecar-injector.istio.io');
    assert.equal(webhookSelects('shop', { 'istio.io/rev': 'default' }, {}, defaultTag), 'rev.namespace.sidecar-injector.istio.io');
  });

  it('enableNamespacesByDefault selects unlabelled namespaces except the system ones', () => {
    const auto = { revision: '', enableNamespacesByDefault: true };
    assert.equal(webhookSelects('shop', {}, {}, auto), 'auto.sidecar-injector.istio.io');
    assert.equal(webhookSelects('kube-system', {}, {}, auto), undefined);
    assert.equal(webhookSelects('shop', {}, { 'sidecar.istio.io/inject': 'false' }, auto), undefined);
    assert.equal(webhookSelects('shop', { 'istio-injection': 'disabled' }, {}, auto), undefined);
  });
});

describe('injectRequired (istiod)', () => {
  it('never injects host-network pods or the ignored system namespaces', () => {
    assert.deepEqual(injectRequired(enabled, pod({ hostNetwork: true, labels: { 'sidecar.istio.io/inject': 'true' } })), {
      inject: false,
      reason: 'the pod uses the host network',
    });
    for (const ns of ['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']) {
      assert.equal(injectRequired(enabled, pod({ namespace: ns, labels: { 'sidecar.istio.io/inject': 'true' } })).inject, false, ns);
    }
    // istio-system is not on istiod's list.
    assert.equal(injectRequired(enabled, pod({ namespace: 'istio-system' })).inject, true);
  });

  // [policy, label, annotation, expected]
  const matrix: [PolicyConfig, string | undefined, string | undefined, boolean][] = [
    [enabled, undefined, undefined, true],
    [enabled, 'false', undefined, false],
    [enabled, undefined, 'false', false],
    [enabled, 'true', 'false', true], // the label wins over the annotation
    [enabled, 'false', 'true', false],
    [enabled, 'bogus', undefined, true], // an invalid value falls back to the policy
    [disabled, undefined, undefined, false],
    [disabled, 'true', undefined, true],
    [disabled, undefined, 'true', true],
    [disabled, 'bogus', 'true', false], // the label is present, so the annotation is not read
    [{ ...enabled, policy: 'sometimes' }, 'true', undefined, false],
  ];
  for (const [config, label, annotation, want] of matrix) {
    it(`policy ${config.policy} × label ${label ?? '-'} × annotation ${annotation ?? '-'} → ${want}`, () => {
      const p = pod({
        labels: label === undefined ? {} : { 'sidecar.istio.io/inject': label },
        annotations: annotation === undefined ? {} : { 'sidecar.istio.io/inject': annotation },
      });
      assert.equal(injectRequired(config, p).inject, want);
    });
  }

  it('neverInjectSelector beats alwaysInjectSelector; both yield to an explicit label', () => {
    const cfg: PolicyConfig = {
      policy: 'disabled',
      neverInjectSelector: [{ matchExpressions: [{ key: 'openshift.io/build.name', operator: 'Exists' }] }, {}],
      alwaysInjectSelector: [{ matchLabels: { tier: 'web' } }],
    };
    assert.deepEqual(injectRequired(cfg, pod({ labels: { tier: 'web' } })), {
      inject: true,
      reason: 'pod labels match alwaysInjectSelector[0]',
    });
    assert.deepEqual(injectRequired(cfg, pod({ labels: { tier: 'web', 'openshift.io/build.name': 'x' } })), {
      inject: false,
      reason: 'pod labels match neverInjectSelector[0]',
    });
    assert.equal(
      injectRequired(cfg, pod({ labels: { tier: 'web', 'openshift.io/build.name': 'x', 'sidecar.istio.io/inject': 'true' } })).inject,
      true,
    );
    // The empty selector {} matches nothing here (istiod skips empty selectors).
    assert.equal(injectRequired({ ...cfg, policy: 'enabled' }, pod({ labels: { app: 'x' } })).inject, true);
  });
});
