import assert from 'node:assert/strict';
import type { ConfigSnapshot } from '../../src/config/store-types.js';
import { MemorySource } from '../../src/config/sources/memory-source.js';
import { ConfigStore } from '../../src/config/store.js';
import { defaultMeshConfig, type MeshConfig } from '../../src/config/mesh/mesh-config.js';
import { PushContext } from '../../src/model/push-context.js';

/**
 * Config objects through the real path (MemorySource validation → ConfigStore → snapshot); an
 * invalid fixture fails the test with the validation errors.
 */
export function snapshotOf(objects: readonly Record<string, unknown>[]): ConfigSnapshot {
  const store = new ConfigStore();
  const source = new MemorySource();
  for (const o of objects) {
    const r = source.add(o as never);
    assert.ok(r.ok, `fixture invalid: ${JSON.stringify(!r.ok && r.errors)}`);
  }
  void source.start(store);
  return store.snapshot();
}

/** A PushContext over `objects`, with mesh config overrides. */
export function pushOf(objects: readonly Record<string, unknown>[], mesh: Partial<MeshConfig> = {}): PushContext {
  return new PushContext({ version: 'v1', mesh: { ...defaultMeshConfig(), ...mesh }, config: snapshotOf(objects) });
}
