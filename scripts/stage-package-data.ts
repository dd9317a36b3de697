/**
 * `npm pack` step (prepack) after the build: copies the data the code reads at run time into dist/, where the
 * built modules look first (src/install/render.ts, src/inject/config.ts, src/bootstrap/console/console-routes.ts). npm drops symlinks from a
 * tarball, and the charts' profiles, CRDs and injection templates are symlinks in the repository,
 * so the copies dereference them: the package carries real files.
 */
import { cpSync, existsSync, lstatSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `from` (under the repository) to `to` (under dist/), the folder replaced and every symlink resolved. */
const STAGED: readonly { from: string; to: string }[] = [
  { from: 'manifests/charts', to: 'dist/manifests/charts' },
  { from: 'src/inject/templates', to: 'dist/src/inject/templates' },
  // The web console's page, script and stylesheet, beside the module that serves them (src/bootstrap/console/console-routes.ts).
  { from: 'src/bootstrap/console/assets', to: 'dist/src/bootstrap/console/assets' },
  // `meshpilot demo` runs on the bundled example (src/demo/run.ts looks two levels up from dist/src/demo).
  { from: 'examples/bookinfo', to: 'dist/examples/bookinfo' },
];

/** Paths under `dir` that are still symlinks (none may be left: npm would drop them). */
function symlinksUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = join(entry.parentPath, entry.name);
    if (lstatSync(p).isSymbolicLink()) out.push(p);
  }
  return out;
}

export function stagePackageData(root = ROOT): string[] {
  const done: string[] = [];
  for (const { from, to } of STAGED) {
    const src = join(root, from);
    const dst = join(root, to);
    if (!existsSync(src)) throw new Error(`${from} is missing`);
    rmSync(dst, { recursive: true, force: true });
    cpSync(src, dst, { recursive: true, dereference: true });
    const left = symlinksUnder(dst);
    if (left.length > 0) throw new Error(`symlinks left after copying ${from}: ${left.map((p) => relative(root, p)).join(', ')}`);
    done.push(to);
  }
  return done;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // --clean (before the build): a fresh dist/, so no module of a deleted source file is packed.
  if (process.argv[2] === '--clean') rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
  else for (const to of stagePackageData()) process.stdout.write(`staged ${to}\n`);
}
