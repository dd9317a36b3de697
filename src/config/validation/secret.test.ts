import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfigFile } from '../parse.js';
import { validateObject } from './validate-object.js';

const secret = (data: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'bookinfo-cert', namespace: 'istio-system' },
  type: 'kubernetes.io/tls',
  data,
  ...extra,
});

describe('Secret (core v1) in the config directory', () => {
  it('is read from a file with its top-level type/data/stringData as the spec', () => {
    const text = `apiVersion: v1\nkind: Secret\nmetadata: {name: bookinfo-cert, namespace: istio-system}\ntype: kubernetes.io/tls\ndata:\n  tls.crt: aGVsbG8=\nstringData:\n  ca.crt: plain\n`;
    const parsed = parseConfigFile(text, 's.yaml');
    assert.ok(parsed.ok);
    assert.equal(parsed.value.documents.length, 1);
    const doc = parsed.value.documents[0]!;
    const r = validateObject(doc.object, doc.origin);
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(r.value.meta.kind, 'Secret');
    const fields = (r.value.spec as { fields: Record<string, { kind: { case: string } }> }).fields;
    assert.deepEqual(Object.keys(fields).sort(), ['data', 'stringData', 'type']);
  });

  it('rejects data that is not base64, naming the key', () => {
    const parsed = parseConfigFile(JSON.stringify(secret({ 'tls.crt': 'aGVsbG8=', 'tls.key': 'not base64!' })), 's.json');
    assert.ok(parsed.ok);
    const doc = parsed.value.documents[0]!;
    const r = validateObject(doc.object, doc.origin);
    assert.ok(!r.ok);
    assert.equal(r.errors.length, 1);
    assert.equal(r.errors[0]!.path, 'data[tls.key]');
    assert.match(r.errors[0]!.message, /base64/);
  });

  it('rejects an apiVersion with a group for the core kind', () => {
    const r = validateObject({ apiVersion: 'core/v1', kind: 'Secret', metadata: { name: 'x', namespace: 'y' }, spec: {} }, { file: 'f' });
    assert.ok(!r.ok);
    assert.match(r.errors[0]!.message, /supported: v1/);
  });
});
