import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackDir } from './cleanup.js';

export interface TempDir {
  readonly path: string;
  /** Removes the directory and everything in it (idempotent). */
  remove(): Promise<void>;
}

/** A fresh directory under the OS temp dir; removed by `remove()` or, at the latest, on process exit. */
export function tempDir(prefix = 'meshpilot-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  const untrack = trackDir(path);
  return {
    path,
    async remove() {
      await rm(path, { recursive: true, force: true });
      untrack();
    },
  };
}
