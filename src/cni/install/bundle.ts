import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { packageVersion } from '../../util/version.js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The plugin as one self-contained file (esbuild, which tsx already brings): Node built-ins plus
 * everything it imports, CommonJS so it runs from any folder, `#!/usr/bin/env node` first.
 * `npm run build:cni` writes dist/cni/meshpilot-cni; the tests bundle into a temp dir the same way.
 * Beside it goes a package.json saying "commonjs": inside this ESM package an extensionless file
 * would otherwise load as ESM; in the CNI bin dir (no package.json) it is CommonJS anyway.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export async function bundlePlugin(outFile: string, root = ROOT): Promise<void> {
  const esbuild = join(root, 'node_modules', '.bin', 'esbuild');
  if (!existsSync(esbuild)) throw new Error(`${esbuild} is missing (npm ci installs it with tsx)`);
  await promisify(execFile)(
    esbuild,
    [
      join(root, 'src', 'cni', 'plugin', 'main.ts'),
      '--bundle',
      '--platform=node',
      '--format=cjs',
      '--target=node20',
      '--minify',
      '--log-level=warning',
      `--define:MESHPILOT_CNI_VERSION=${JSON.stringify(packageVersion())}`,
      `--outfile=${outFile}`,
    ],
    { cwd: root },
  );
  writeFileSync(join(dirname(outFile), 'package.json'), '{ "type": "commonjs" }\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await bundlePlugin(process.argv[2] ?? join(ROOT, 'dist', 'cni', 'meshpilot-cni'));
}
