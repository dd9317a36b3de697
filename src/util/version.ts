import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** meshpilot's package version, found upwards from this module (src/ under tsx, and dist/). */
export function packageVersion(): string {
  return packageVersionFrom(path.dirname(fileURLToPath(import.meta.url)));
}

/** The version of the meshpilot package.json at or above `dir` ('unknown' when there is none). */
export function packageVersionFrom(start: string): string {
  let dir = start;
  for (let i = 0; i < 6; i++) {
    const p = path.join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'meshpilot' && pkg.version) return pkg.version;
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}
