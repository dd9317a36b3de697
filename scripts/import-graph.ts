/**
 * The folder-level import graph of src: every edge `from -> to` with the number of imports behind
 * it, back edges against the layers of scripts/layers.ts, folder cycles, and imports that bypass a
 * folder's public surface (SURFACE in scripts/layers.ts).
 *
 *   npx tsx scripts/import-graph.ts [--files] [--tests]
 *
 * `--files` lists the file imports behind each edge; `--tests` adds the imports of `*.test.ts`
 * files (which the layers and surfaces do not govern). Every import counts, type-only and dynamic
 * ones too (TypeScript's own import scanner). Exits 1 when a rule is broken.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { LAYERS, SURFACE, TIER } from './layers.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** One relative import of a file under src: paths from the repository root. */
export interface FileImport {
  readonly from: string;
  readonly to: string;
  /** The folder of src the importer sits in (`model`). */
  readonly fromFolder: string;
  /** The folder of src imported (`xds`), or the top folder outside src (`test`). */
  readonly toFolder: string;
  readonly fromTest: boolean;
  /** Erased from the JavaScript (`import type`): no load-time edge, so it cannot close a load cycle. */
  readonly typeOnly?: boolean;
}

const isTestFile = (path: string): boolean => path.endsWith('.test.ts');

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const posix = (p: string): string => p.split(sep).join('/');

/** The folder a repository path belongs to: `src/model/x.ts` → `model`, `test/support/x.ts` → `test`. */
export function folderOf(path: string): string {
  const parts = path.split('/');
  return parts[0] === 'src' ? (parts[1] ?? '') : (parts[0] ?? '');
}

/** Every relative import of every file under `<root>/src`. */
export function collectImports(root = ROOT): FileImport[] {
  const out: FileImport[] = [];
  for (const abs of tsFiles(join(root, 'src'))) {
    const from = posix(relative(root, abs));
    const text = readFileSync(abs, 'utf8');
    const info = ts.preProcessFile(text, true, true);
    const loaded = loadedSpecifiers(abs, text);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = posix(relative(root, resolve(dirname(abs), fileName))).replace(/\.js$/, '.ts');
      const i: FileImport = { from, to, fromFolder: folderOf(from), toFolder: folderOf(to), fromTest: isTestFile(from) };
      out.push(loaded.has(fileName) ? i : { ...i, typeOnly: true });
    }
  }
  return out.sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
}

/** The specifiers a file loads at run time: imported or re-exported for a value, or import()ed; not `import type`. */
function loadedSpecifiers(path: string, text: string): Set<string> {
  const loaded = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      if (!isTypeOnlyDeclaration(node)) loaded.add(node.moduleSpecifier.text);
      return;
    }
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteral(arg)) loaded.add(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false));
  return loaded;
}

/** `import type {…}`, `import { type A, type B }`, `export type {…} from`: erased from the JavaScript. */
function isTypeOnlyDeclaration(node: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(node)) {
    if (node.isTypeOnly) return true;
    const c = node.exportClause;
    return c !== undefined && ts.isNamedExports(c) && c.elements.length > 0 && c.elements.every((e) => e.isTypeOnly);
  }
  const c = node.importClause;
  if (c === undefined) return false; // a side-effect import
  if (c.isTypeOnly) return true;
  const b = c.namedBindings;
  return c.name === undefined && b !== undefined && ts.isNamedImports(b) && b.elements.length > 0 && b.elements.every((e) => e.isTypeOnly);
}

/** Folder edges (`from -> to`, folders differing) with the file imports behind each. */
export function folderEdges(imports: readonly FileImport[]): Map<string, FileImport[]> {
  const edges = new Map<string, FileImport[]>();
  for (const i of imports) {
    if (i.fromFolder === i.toFolder) continue;
    const key = `${i.fromFolder} -> ${i.toFolder}`;
    const list = edges.get(key);
    if (list) list.push(i);
    else edges.set(key, [i]);
  }
  return edges;
}

/** The folder cycles (strongly connected components of more than one folder), each sorted. */
export function folderCycles(imports: readonly FileImport[]): string[][] {
  return cyclesOf(imports.filter((i) => i.fromFolder !== i.toFolder).map((i) => [i.fromFolder, i.toFolder] as const));
}

/** The cycles of a directed graph given by its edges: its strongly connected components of more than one node, each sorted. */
function cyclesOf(edges: readonly (readonly [string, string])[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const [from, to] of edges) {
    let s = next.get(from);
    if (!s) next.set(from, (s = new Set()));
    s.add(to);
  }
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const sccs: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) sccs.push(scc.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return sccs.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Every broken layer rule, one line each (empty when the layers hold). */
export function layerViolations(imports: readonly FileImport[], existingFolders: readonly string[]): string[] {
  const problems: string[] = [];
  for (const f of existingFolders) if (!TIER.has(f)) problems.push(`src/${f} is in no layer: place it in scripts/layers.ts`);
  const code = imports.filter((i) => !i.fromTest);
  for (const i of code) {
    if (i.toFolder === 'test') {
      problems.push(`${i.from} imports ${i.to}: code in src (outside *.test.ts) must not import test code`);
      continue;
    }
    if (!i.to.startsWith('src/') || i.fromFolder === i.toFolder) continue;
    const from = TIER.get(i.fromFolder);
    const to = TIER.get(i.toFolder);
    if (from === undefined || to === undefined || to < from) continue;
    problems.push(
      to === from
        ? `${i.from} imports ${i.to}: ${i.fromFolder} and ${i.toFolder} are peers (tier ${from}) and must not import each other`
        : `${i.from} imports ${i.to}: ${i.fromFolder} (tier ${from}) must not import ${i.toFolder} (tier ${to}), a higher layer`,
    );
  }
  for (const c of folderCycles(code)) problems.push(`folder cycle: ${c.join(', ')}`);
  return problems;
}

/** The path of a module inside its folder of src: `src/config/sources/kube/index.ts` → `sources/kube/index.ts`. */
const inFolder = (path: string): string => path.split('/').slice(2).join('/');

/**
 * Every import past a folder's public surface, one line each (empty when none): an import of
 * another folder's module that SURFACE does not list, an import cycle through an index.ts (a module
 * importing the index that re-exports it; subfolders' indexes too), a folder missing from SURFACE,
 * a listed module that does not exist.
 */
export function surfaceViolations(
  imports: readonly FileImport[],
  existingFolders: readonly string[],
  exists: (path: string) => boolean,
): string[] {
  const problems: string[] = [];
  for (const f of existingFolders)
    if (!(f in SURFACE)) problems.push(`src/${f} has no public surface: list it in SURFACE (scripts/layers.ts)`);
  for (const [f, surface] of Object.entries(SURFACE)) {
    if (surface === 'every module') continue;
    for (const m of surface) if (!exists(`src/${f}/${m}`)) problems.push(`SURFACE lists src/${f}/${m}, which does not exist`);
  }
  for (const i of imports) {
    if (i.fromTest || !i.to.startsWith('src/')) continue;
    const surface = SURFACE[i.toFolder];
    if (surface === undefined || surface === 'every module') continue;
    const module = inFolder(i.to);
    if (i.fromFolder !== i.toFolder) {
      if (surface.includes(module)) continue;
      const via = surface.includes('index.ts') ? `export it from src/${i.toFolder}/index.ts` : 'import a module SURFACE lists';
      problems.push(`${i.from} imports ${i.to}: past the public surface of src/${i.toFolder}; ${via} (SURFACE in scripts/layers.ts)`);
    }
  }
  const code = imports.filter((i) => !i.fromTest && !i.typeOnly && i.to.startsWith('src/'));
  for (const cycle of cyclesOf(code.map((i) => [i.from, i.to] as const))) {
    const indexes = cycle.filter((m) => m.endsWith('/index.ts'));
    if (indexes.length > 0)
      problems.push(
        `import cycle through ${indexes.join(', ')}: ${cycle.join(', ')}; inside a folder, import modules by path, not through its index`,
      );
  }
  return problems;
}

/** The folders of `<root>/src`. */
export function srcFolders(root = ROOT): string[] {
  return readdirSync(join(root, 'src'))
    .filter((n) => statSync(join(root, 'src', n)).isDirectory())
    .sort();
}

function main(): void {
  const args = process.argv.slice(2);
  const imports = collectImports().filter((i) => args.includes('--tests') || !i.fromTest);
  const rank = (f: string): number => TIER.get(f) ?? LAYERS.length;
  const edges = [...folderEdges(imports)].sort(
    ([, [a]], [, [b]]) =>
      rank(a!.fromFolder) - rank(b!.fromFolder) ||
      a!.fromFolder.localeCompare(b!.fromFolder) ||
      rank(a!.toFolder) - rank(b!.toFolder) ||
      a!.toFolder.localeCompare(b!.toFolder),
  );
  console.log('layers (bottom first):');
  LAYERS.forEach((folders, tier) => console.log(`  ${tier}. ${folders.join(', ')}`));
  console.log(`\nfolder imports of src${args.includes('--tests') ? ' (with *.test.ts)' : ' (outside *.test.ts)'}: from -> to  count`);
  for (const [key, list] of edges) {
    const { fromFolder, toFolder } = list[0]!;
    const back =
      toFolder === 'test'
        ? list.every((i) => i.fromTest)
          ? ''
          : '  TEST CODE'
        : TIER.has(toFolder) && rank(toFolder) >= rank(fromFolder)
          ? '  BACK EDGE'
          : '';
    console.log(`  ${key.padEnd(32)} ${String(list.length).padStart(4)}${back}`);
    if (args.includes('--files')) for (const i of list) console.log(`      ${i.from} -> ${i.to}`);
  }
  const cycles = folderCycles(imports);
  console.log(`\nfolder cycles: ${cycles.length === 0 ? 'none' : ''}`);
  for (const c of cycles) console.log(`  ${c.join(', ')}`);
  const problems = layerViolations(collectImports(), srcFolders());
  console.log(`\nlayer violations: ${problems.length === 0 ? 'none' : ''}`);
  for (const p of problems) console.log(`  ${p}`);
  const bypasses = surfaceViolations(collectImports(), srcFolders(), (p) => existsSync(join(ROOT, p)));
  console.log(`\npublic surface violations: ${bypasses.length === 0 ? 'none' : ''}`);
  for (const p of bypasses) console.log(`  ${p}`);
  if (problems.length > 0 || bypasses.length > 0) process.exitCode = 1;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
