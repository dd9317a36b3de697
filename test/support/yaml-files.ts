import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { stringify } from 'yaml';

/**
 * Writes `content` to `dir/file` atomically: a hidden temp file (no .yaml suffix, so a directory
 * watcher ignores it) in the same directory, then rename over the target. Returns the full path.
 */
export async function writeFileAtomic(dir: string, file: string, content: string | Uint8Array): Promise<string> {
  const target = join(dir, file);
  await mkdir(dirname(target), { recursive: true });
  const tmp = join(dirname(target), `.${basename(target)}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, content, 'utf8');
  await rename(tmp, target);
  return target;
}

/** Serialises `docs` as a multi-document YAML file and writes it atomically. Returns the full path. */
export function writeYaml(dir: string, file: string, docs: readonly unknown[]): Promise<string> {
  return writeFileAtomic(dir, file, docs.map((d) => stringify(d)).join('---\n'));
}

export async function removeFile(dir: string, file: string): Promise<void> {
  await rm(join(dir, file), { force: true });
}
