import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from '../../test/support/paths.js';

const CLIENT = '@kubernetes/client-node';

/**
 * The static import chains (no dynamic import()) from `entry` to the Kubernetes client library, from
 * esbuild's metafile (esbuild comes with tsx, as for the CNI bundle): it drops type-only imports
 * as the compiled JavaScript does.
 */
async function chainsToClient(entry: string): Promise<string[]> {
  const r = await build({
    entryPoints: [entry],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    metafile: true,
    write: false,
    outdir: 'out',
    splitting: true,
    logLevel: 'silent',
    packages: 'external',
  });
  const inputs: Metafile['inputs'] = r.metafile.inputs;
  const via = new Map<string, string | undefined>([[entry, undefined]]);
  const queue = [entry];
  const chains: string[] = [];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const imp of inputs[file]?.imports ?? []) {
      if (imp.kind === 'dynamic-import') continue;
      if (imp.path === CLIENT) {
        const chain = [file];
        for (let c = via.get(file); c !== undefined; c = via.get(c)) chain.unshift(c);
        chains.push(chain.join(' → '));
      } else if (!via.has(imp.path)) {
        via.set(imp.path, file);
        queue.push(imp.path);
      }
    }
  }
  return chains;
}

test('discovery without a cluster does not load the Kubernetes client (~80 MiB of RSS): only kube-side.ts reaches it', async () => {
  assert.deepEqual(await chainsToClient('src/bootstrap/discovery.ts'), []);
  assert.ok((await chainsToClient('src/bootstrap/kube-side.ts')).length > 0, 'the seam itself loads the client');
});
