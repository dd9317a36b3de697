import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Whether golden files should be rewritten from the current output (`UPDATE_GOLDEN=1`). */
export function updatingGolden(): boolean {
  return process.env.UPDATE_GOLDEN === '1';
}

/**
 * Compares `value` (as pretty JSON) with the golden file, or rewrites the file under
 * UPDATE_GOLDEN=1. A missing golden file fails with the command that creates it.
 */
export function assertGolden(file: string, value: unknown): void {
  const text = `${JSON.stringify(value, undefined, 2)}\n`;
  if (updatingGolden()) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) assert.fail(`golden file ${file} is missing: run with UPDATE_GOLDEN=1 to create it, then review the diff`);
  const want = readFileSync(file, 'utf8');
  if (want !== text) {
    // Compare parsed values so assert prints a structural diff instead of two giant strings.
    assert.deepStrictEqual(
      JSON.parse(text),
      JSON.parse(want),
      `${file} differs from the generated config (UPDATE_GOLDEN=1 rewrites it; review the diff)`,
    );
  }
}
