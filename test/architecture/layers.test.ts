/**
 * The layers of src (scripts/layers.ts) hold: no folder imports a higher layer or a peer, no
 * folder cycle, nothing in src outside tests imports test code, every folder is placed. And every
 * folder is entered only through its public surface (SURFACE), with no import cycle through an
 * index. `npx tsx scripts/import-graph.ts --files` shows the graph and what breaks it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  collectImports,
  folderCycles,
  layerViolations,
  ROOT,
  srcFolders,
  surfaceViolations,
  type FileImport,
} from '../../scripts/import-graph.js';
import { LAYERS, SURFACE, TIER } from '../../scripts/layers.js';

const imp = (from: string, to: string): FileImport => {
  const folder = (p: string) => (p.startsWith('src/') ? p.split('/')[1]! : p.split('/')[0]!);
  return { from, to, fromFolder: folder(from), toFolder: folder(to), fromTest: from.endsWith('.test.ts') };
};

describe('layers of src', () => {
  const imports = collectImports();

  it('every import follows the layers, with no folder cycle and no import of test code', () => {
    const problems = layerViolations(imports, srcFolders());
    assert.deepEqual(problems, [], `layer rules broken (scripts/layers.ts):\n  ${problems.join('\n  ')}`);
  });

  it('every folder of src sits in exactly one layer', () => {
    const placed = LAYERS.flat();
    assert.deepEqual(
      placed.filter((f, i) => placed.indexOf(f) !== i),
      [],
      'a folder placed twice',
    );
    for (const f of srcFolders()) assert.ok(TIER.has(f), `src/${f} is in no layer`);
  });

  it('sees type-only and dynamic imports, and reports a back edge, a peer import, a cycle and an import of test code', () => {
    const planted = [
      imp('src/model/a.ts', 'src/networking/b.ts'),
      imp('src/networking/b.ts', 'src/model/a.ts'),
      imp('src/agent/c.ts', 'src/cni/d.ts'),
      imp('src/xds/e.ts', 'test/support/f.ts'),
      imp('src/xds/e.test.ts', 'src/cli/g.ts'),
    ];
    assert.deepEqual(layerViolations(planted, ['agent', 'cni', 'model', 'networking', 'xds', 'nowhere']), [
      'src/nowhere is in no layer: place it in scripts/layers.ts',
      'src/model/a.ts imports src/networking/b.ts: model (tier 4) must not import networking (tier 7), a higher layer',
      'src/agent/c.ts imports src/cni/d.ts: agent and cni are peers (tier 8) and must not import each other',
      'src/xds/e.ts imports test/support/f.ts: code in src (outside *.test.ts) must not import test code',
      'folder cycle: model, networking',
    ]);
    assert.deepEqual(folderCycles(planted), [['model', 'networking']]);
    const cli = imports.filter((i) => i.from === 'src/cli/dispatch.ts' && i.to === 'src/bootstrap/options.ts');
    assert.ok(cli.length >= 2, 'the type-only and the dynamic import of bootstrap/options.ts in cli/dispatch.ts are both seen');
    assert.ok(
      cli.every((i) => !i.typeOnly),
      'a file that import()s a module loads it, even if it also imports types from it',
    );
    const agent = imports.filter((i) => i.from === 'src/agent/agent.ts' && i.to === 'src/util/clock.ts');
    assert.deepEqual(
      agent.map((i) => i.typeOnly),
      [true],
      'agent.ts imports only the Clock type',
    );
  });
});

describe('public surfaces of src', () => {
  it('every import of another folder goes through its public surface, and no import cycle runs through an index', () => {
    const problems = surfaceViolations(collectImports(), srcFolders(), (p) => existsSync(join(ROOT, p)));
    assert.deepEqual(problems, [], `public surfaces bypassed (SURFACE in scripts/layers.ts):\n  ${problems.join('\n  ')}`);
  });

  it('reports a bypass, a load cycle through an index, an unlisted folder and a listed module that is gone; tests, the floor and type-only cycles are free', () => {
    const planted = [
      imp('src/xds/a.ts', 'src/model/push-context.ts'),
      imp('src/xds/a.ts', 'src/model/index.ts'),
      imp('src/xds/a.ts', 'src/util/log.ts'),
      imp('src/xds/a.ts', 'src/gen/envoy/config/core/v3/base_pb.ts'),
      imp('src/xds/a.test.ts', 'src/model/push-context.ts'),
      imp('src/model/index.ts', 'src/model/b.ts'),
      imp('src/model/b.ts', 'src/model/c.ts'),
      imp('src/model/c.ts', 'src/model/index.ts'),
      // A type-only import is erased from the JavaScript: it closes no load cycle.
      imp('src/registry/index.ts', 'src/registry/d.ts'),
      { ...imp('src/registry/d.ts', 'src/registry/index.ts'), typeOnly: true },
    ];
    assert.deepEqual(
      surfaceViolations(planted, ['model', 'nowhere', 'xds'], (p) => p !== 'src/demo/run.ts'),
      [
        'src/nowhere has no public surface: list it in SURFACE (scripts/layers.ts)',
        'SURFACE lists src/demo/run.ts, which does not exist',
        'src/xds/a.ts imports src/model/push-context.ts: past the public surface of src/model; export it from src/model/index.ts (SURFACE in scripts/layers.ts)',
        'import cycle through src/model/index.ts: src/model/b.ts, src/model/c.ts, src/model/index.ts; inside a folder, import modules by path, not through its index',
      ],
    );
  });

  it('lists a surface for every folder, and a reason beside every entry other than index.ts', () => {
    for (const f of srcFolders()) assert.ok(f in SURFACE, `src/${f} has no public surface`);
    const source = readFileSync(join(ROOT, 'scripts/layers.ts'), 'utf8');
    const table = source.slice(source.indexOf('export const SURFACE'));
    for (const line of table.split('\n')) {
      const entry = /^\s*'([^']+\.ts)',(.*)$/.exec(line);
      if (entry === null || entry[1]!.endsWith('index.ts')) continue;
      assert.match(
        entry[2]!,
        /\/\/ (kube|light|command)\b/,
        `SURFACE entry ${entry[1]} needs its reason (kube, light or command): ${line.trim()}`,
      );
    }
  });
});
