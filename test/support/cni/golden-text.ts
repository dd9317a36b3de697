import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { updatingGolden } from '../golden.js';

/**
 * Text golden files (test/support/golden.ts is JSON-only): compares `text` with the file, or
 * rewrites it under UPDATE_GOLDEN=1. A missing file fails with the command that creates it.
 */
export function assertGoldenText(file: string, text: string): void {
  if (updatingGolden()) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) assert.fail(`golden file ${file} is missing: run with UPDATE_GOLDEN=1 to create it, then review the diff`);
  assert.equal(text, readFileSync(file, 'utf8'), `${file} differs (UPDATE_GOLDEN=1 rewrites it; review the diff)`);
}
