/** The order of a proxy's WasmPlugins within a phase: priority, then namespace, then creation time (istiod). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { proxyOf, pushFor } from '../../../test/support/networking/cluster-fixtures.js';
import { wasmPluginsFor, wasmSource } from './wasm-plugins.js';

const plugin = (name: string, namespace: string, priority?: number, creationTimestamp?: string): Record<string, unknown> => ({
  apiVersion: 'extensions.istio.io/v1alpha1',
  kind: 'WasmPlugin',
  metadata: { name, namespace, ...(creationTimestamp ? { creationTimestamp } : {}) },
  spec: { url: 'oci://example.com/plugin:1', phase: 'AUTHN', ...(priority !== undefined ? { priority } : {}) },
});

describe('wasmPluginsFor: order within a phase', () => {
  it('equal priorities: own namespace before root, each oldest first (creation time, then name); higher priority first', () => {
    const push = pushFor([
      plugin('a-new', 'default', undefined, '2024-03-01T00:00:00Z'),
      plugin('z-old', 'default', undefined, '2024-01-01T00:00:00Z'),
      plugin('m-file', 'default'),
      plugin('root', 'istio-system'),
      plugin('urgent', 'istio-system', 10, '2024-06-01T00:00:00Z'),
    ]);
    const got = wasmPluginsFor(wasmSource(push), proxyOf('sidecar'), undefined).get('AUTHN') ?? [];
    assert.deepEqual(
      got.map((c) => `${c.meta.namespace}/${c.meta.name}`),
      ['istio-system/urgent', 'default/m-file', 'default/z-old', 'default/a-new', 'istio-system/root'],
    );
  });
});
