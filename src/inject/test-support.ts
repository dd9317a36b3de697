/** Helpers for the injection tests (not part of the product). */
import assert from 'node:assert/strict';
import type { JsonPatchOp, JsonValue } from '../util/json-patch.js';

/** A deliberately naive RFC 6902 applier (add/replace/remove), independent of the code under test. */
export function applyJsonPatch(doc: JsonValue, ops: readonly JsonPatchOp[]): JsonValue {
  let root: JsonValue = structuredClone(doc);
  for (const op of ops) {
    if (op.path === '') {
      assert.notEqual(op.op, 'remove', 'cannot remove the root');
      root = structuredClone((op as { value: JsonValue }).value);
      continue;
    }
    assert.ok(op.path.startsWith('/'), `bad pointer ${op.path}`);
    const tokens = op.path
      .slice(1)
      .split('/')
      .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = tokens.pop() as string;
    let parent: JsonValue = root;
    for (const t of tokens) {
      assert.ok(typeof parent === 'object' && parent !== null, `${op.path}: ${t} has no parent`);
      const next: JsonValue | undefined = Array.isArray(parent) ? parent[Number(t)] : parent[t];
      assert.ok(next !== undefined, `${op.path}: missing ${t}`);
      parent = next;
    }
    if (Array.isArray(parent)) {
      const i = last === '-' ? parent.length : Number(last);
      assert.ok(Number.isInteger(i) && i >= 0, `${op.path}: bad index`);
      if (op.op === 'add') {
        assert.ok(i <= parent.length, `${op.path}: index past the end`);
        parent.splice(i, 0, structuredClone(op.value));
      } else {
        assert.ok(i < parent.length, `${op.path}: no element to ${op.op}`);
        if (op.op === 'remove') parent.splice(i, 1);
        else parent[i] = structuredClone(op.value);
      }
    } else {
      assert.ok(typeof parent === 'object' && parent !== null, `${op.path}: parent is not a container`);
      if (op.op !== 'add') assert.ok(Object.hasOwn(parent, last), `${op.path}: no member to ${op.op}`);
      if (op.op === 'remove') delete parent[last];
      else parent[last] = structuredClone(op.value);
    }
  }
  return root;
}
