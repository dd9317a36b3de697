/**
 * The layers of src (scripts/layers.ts) hold: no folder imports a higher layer or a peer, no
 * folder cycle, nothing in src outside tests imports test code, every folder is placed.
 * `npx tsx scripts/import-graph.ts --files` shows the graph and what breaks it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectImports, folderCycles, layerViolations, srcFolders, type FileImport } from '../../scripts/import-graph.js';
import { LAYERS, TIER } from '../../scripts/layers.js';

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
    const imp = (from: string, to: string): FileImport => {
      const folder = (p: string) => (p.startsWith('src/') ? p.split('/')[1]! : p.split('/')[0]!);
      return { from, to, fromFolder: folder(from), toFolder: folder(to), fromTest: from.endsWith('.test.ts') };
    };
    const planted = [
      imp('src/model/a.ts', 'src/networking/b.ts'),
      imp('src/networking/b.ts', 'src/model/a.ts'),
      imp('src/agent/c.ts', 'src/cni/d.ts'),
      imp('src/xds/e.ts', 'test/support/f.ts'),
      imp('src/xds/e.test.ts', 'src/cli/g.ts'),
    ];
    assert.deepEqual(layerViolations(planted, ['agent', 'cni', 'model', 'networking', 'xds', 'nowhere']), [
      'src/nowhere is in no layer: place it in scripts/layers.ts',
      'src/model/a.ts imports src/networking/b.ts: model (tier 3) must not import networking (tier 6), a higher layer',
      'src/agent/c.ts imports src/cni/d.ts: agent and cni are peers (tier 7) and must not import each other',
      'src/xds/e.ts imports test/support/f.ts: code in src (outside *.test.ts) must not import test code',
      'folder cycle: model, networking',
    ]);
    assert.deepEqual(folderCycles(planted), [['model', 'networking']]);
    const cli = imports.filter((i) => i.from === 'src/cli/dispatch.ts' && i.to === 'src/bootstrap/options.ts');
    assert.ok(cli.length >= 2, 'the type-only and the dynamic import of bootstrap/options.ts in cli/dispatch.ts are both seen');
  });
});
