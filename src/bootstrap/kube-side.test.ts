import assert from 'node:assert/strict';
import { test } from 'node:test';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from '../../test/support/paths.js';

const CLIENT_NODE = '@kubernetes/client-node';
const KUBE_CLIENT = 'src/kube/client.ts';

/**
 * The import chains from `entry` to `target` (a package or a file of src), from esbuild's metafile
 * (esbuild comes with tsx, as for the CNI bundle): it drops type-only imports as the compiled
 * JavaScript does. `dynamic`: follow `import()` too — what the process may load at some point.
 */
async function chainsTo(entry: string, target: string, dynamic: boolean): Promise<string[]> {
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
  const chainOf = (file: string): string => {
    const chain = [file];
    for (let c = via.get(file); c !== undefined; c = via.get(c)) chain.unshift(c);
    return chain.join(' → ');
  };
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (file === target) chains.push(chainOf(file));
    for (const imp of inputs[file]?.imports ?? []) {
      if (imp.kind === 'dynamic-import' && !dynamic) continue;
      if (imp.path === target && imp.external === true) chains.push(`${chainOf(file)} → ${target}`);
      else if (!via.has(imp.path)) {
        via.set(imp.path, file);
        queue.push(imp.path);
      }
    }
  }
  return chains;
}

test('discovery without a cluster does not load the Kubernetes side: only the dynamic import of kube-side.ts reaches the client', async () => {
  assert.deepEqual(await chainsTo('src/bootstrap/discovery.ts', KUBE_CLIENT, false), []);
  assert.ok((await chainsTo('src/bootstrap/kube-side.ts', KUBE_CLIENT, false)).length > 0, 'the seam itself loads the client');
});

test('no command of the CLI loads @kubernetes/client-node at run time (its model types are imported as types only)', async () => {
  assert.deepEqual(await chainsTo('src/cli/meshpilot.ts', CLIENT_NODE, true), []);
  // The walk does follow the CLI's dynamic imports down to the cluster code.
  assert.ok((await chainsTo('src/cli/meshpilot.ts', KUBE_CLIENT, true)).length > 0, 'the CLI reaches src/kube through import()');
  assert.ok((await chainsTo('test/support/kube.ts', CLIENT_NODE, false)).length > 0, 'a module that imports client-node is found');
});
