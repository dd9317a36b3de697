import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { test } from 'node:test';
import type { DescFile, DescMessage } from '@bufbuild/protobuf';
import { nestedTypes } from '@bufbuild/protobuf/reflect';
import { messagePlan, needsVisit } from './plan.js';

const GEN = join(dirname(fileURLToPath(import.meta.url)), '../../gen');

function generatedFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return generatedFiles(p);
    return p.endsWith('_pb.ts') ? [p] : [];
  });
}

async function allMessages(): Promise<DescMessage[]> {
  const out: DescMessage[] = [];
  for (const file of generatedFiles(GEN)) {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (!name.startsWith('file_')) continue;
      for (const t of nestedTypes(value as DescFile)) if (t.kind === 'message') out.push(t);
    }
  }
  return out;
}

test('the rules of every generated message compile (no rule of a wrong type, every pattern is RE2)', async () => {
  const messages = await allMessages();
  assert.ok(messages.length > 500, `expected the whole of src/gen, found ${messages.length} messages`);
  const broken: string[] = [];
  let withWork = 0;
  for (const desc of messages) {
    try {
      messagePlan(desc);
      if (needsVisit(desc)) withWork++;
    } catch (err) {
      broken.push(`${desc.typeName}: ${(err as Error).message}`);
    }
  }
  assert.deepEqual(broken, []);
  // Most Envoy messages carry rules; a plan that finds none would mean options are not being read.
  assert.ok(withWork > messages.length / 3, `only ${withWork} of ${messages.length} messages have anything to check`);
});
