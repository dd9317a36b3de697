import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  caBundlePatch,
  failsOpen,
  INJECTION_WEBHOOK_SUFFIX,
  isOurs,
  type CaBundleTarget,
  type WebhookConfiguration,
} from './ca-bundle-patcher.js';

const validator: CaBundleTarget = { kind: 'ValidatingWebhookConfiguration', name: 'istio-validator-istio-system' };
const injector: CaBundleTarget = {
  kind: 'MutatingWebhookConfiguration',
  name: 'istio-sidecar-injector',
  webhookSuffix: INJECTION_WEBHOOK_SUFFIX,
};

const config = (
  name: string,
  labels: Record<string, string> | undefined,
  webhooks: { name: string; caBundle?: string; failurePolicy?: string }[],
): WebhookConfiguration => ({
  metadata: { name, resourceVersion: '42', ...(labels ? { labels } : {}) },
  webhooks: webhooks.map((w) => ({
    name: w.name,
    clientConfig: w.caBundle !== undefined ? { caBundle: w.caBundle } : {},
    ...(w.failurePolicy ? { failurePolicy: w.failurePolicy } : {}),
  })),
});

describe('caBundle patcher: which configurations and webhooks', () => {
  it('selects by istio.io/rev as istiod; the configured name only when there is no revision label', () => {
    assert.equal(isOurs(config('anything', { 'istio.io/rev': 'default' }, []), validator, 'default'), true);
    assert.equal(
      isOurs(config('istio-validator-istio-system', { 'istio.io/rev': 'canary' }, []), validator, 'default'),
      false,
      "another revision's",
    );
    assert.equal(isOurs(config('istio-validator-istio-system', undefined, []), validator, 'default'), true);
    assert.equal(isOurs(config('someone-elses', { app: 'x' }, []), validator, 'default'), false);
  });

  it('a validating configuration: every webhook without the bundle, guarded by the resourceVersion', () => {
    const c = config('v', undefined, [
      { name: 'rev.validation.istio.io' },
      { name: 'other', caBundle: 'QUJD' },
      { name: 'third', caBundle: 'old' },
    ]);
    assert.deepEqual(caBundlePatch(c, validator, 'QUJD'), [
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: 'QUJD' },
      { op: 'add', path: '/webhooks/2/clientConfig/caBundle', value: 'QUJD' },
    ]);
  });

  it('a mutating configuration: only webhooks named *sidecar-injector.istio.io; nothing when up to date', () => {
    const c = config('m', undefined, [
      { name: 'rev.namespace.sidecar-injector.istio.io' },
      { name: 'someone.else.io' },
      { name: 'object.sidecar-injector.istio.io', caBundle: 'QUJD' },
    ]);
    assert.deepEqual(caBundlePatch(c, injector, 'QUJD'), [
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: 'QUJD' },
    ]);
    assert.deepEqual(
      caBundlePatch(config('m', undefined, [{ name: 'sidecar-injector.istio.io', caBundle: 'QUJD' }]), injector, 'QUJD'),
      [],
    );
  });

  it('fail-close: Ignore becomes Fail only when asked (once the probe succeeded), and only on targeted webhooks', () => {
    const c = config('v', undefined, [
      { name: 'rev.validation.istio.io', caBundle: 'QUJD', failurePolicy: 'Ignore' },
      { name: 'b', caBundle: 'QUJD', failurePolicy: 'Fail' },
    ]);
    assert.equal(failsOpen(c, validator), true);
    assert.deepEqual(caBundlePatch(c, validator, 'QUJD'), [], 'not ready: nothing to change');
    assert.deepEqual(caBundlePatch(c, validator, 'QUJD', true), [
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/webhooks/0/failurePolicy', value: 'Fail' },
    ]);
    assert.equal(
      failsOpen(config('m', undefined, [{ name: 'audit.example.io', failurePolicy: 'Ignore' }]), injector),
      false,
      'not a targeted webhook',
    );
  });
});
