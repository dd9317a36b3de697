import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateObject } from './index.js';

const wasm = (spec: Record<string, unknown>) =>
  validateObject(
    { apiVersion: 'extensions.istio.io/v1alpha1', kind: 'WasmPlugin', metadata: { name: 'p', namespace: 'shop' }, spec },
    { file: 'plugins.yaml' },
  );

function errors(spec: Record<string, unknown>): string[] {
  const r = wasm(spec);
  return r.ok ? [] : r.errors.map((e) => `${e.path ?? ''}: ${e.message}`);
}

describe('WasmPlugin validation (istiod ValidateWasmPlugin)', () => {
  it('accepts every URL form istiod does, with the optional fields', () => {
    for (const url of ['oci://r.io/a/b:1', 'r.io/a/b:1', 'https://h/x.wasm', 'http://h/x.wasm', 'file:///opt/x.wasm'])
      assert.deepEqual(errors({ url }), [], url);
    assert.deepEqual(
      errors({
        url: 'oci://r/a',
        sha256: 'a'.repeat(64),
        phase: 'AUTHZ',
        priority: 10,
        failStrategy: 'FAIL_OPEN',
        match: [{ mode: 'SERVER', ports: [{ number: 8080 }] }],
        vmConfig: {
          env: [
            { name: 'A', value: 'x' },
            { name: 'B', valueFrom: 'HOST' },
          ],
        },
      }),
      [],
    );
  });
  it('names each bad field', () => {
    assert.deepEqual(errors({}), ['spec.url: url field needs to be set']);
    assert.deepEqual(errors({ url: 'ftp://h/x.wasm' }), ['spec.url: url contains unsupported scheme: ftp']);
    assert.deepEqual(errors({ url: 'oci://r/a', sha256: 'ABC' }), ['spec.sha256: sha256 field must match [a-f0-9]{64} pattern']);
    assert.deepEqual(
      errors({ url: 'oci://r/a', vmConfig: { env: [{ name: 'A' }, { name: 'A' }, { name: 'H', valueFrom: 'HOST', value: 'v' }] } }),
      ['spec.vmConfig.env[1].name: duplicate env "A"', 'spec.vmConfig.env[2].value: value may only be set when valueFrom is INLINE'],
    );
    assert.deepEqual(errors({ url: 'oci://r/a', match: [{ ports: [{ number: 70000 }] }] }), [
      'spec.match[0].ports[0].number: port 70000 is out of range [1, 65535]',
    ]);
    assert.deepEqual(
      errors({
        url: 'oci://r/a',
        selector: { matchLabels: { a: 'b' } },
        targetRefs: [{ kind: 'Gateway', group: 'gateway.networking.k8s.io', name: 'g' }],
      }),
      ['spec: only one of targetRefs or workloadSelector can be set'],
    );
    assert.ok(errors({ url: 'oci://r/a', phase: 'NOPE' }).some((e) => e.startsWith('spec.phase')));
  });
});
