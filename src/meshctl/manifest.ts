/**
 * `meshctl manifest generate`: prints what `meshctl install` would apply — the charts in
 * manifests/charts rendered for the values, in `helm template`'s layout (`---`, `# Source:`), or
 * with `-o DIR` one file per template under DIR/<release>/ (as `helm template --output-dir`).
 * Bad values end with one line naming the key and a non-zero exit, nothing printed on stdout.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { formatManifest, renderInstall, type InstallRenderOptions, type RenderedObject } from '../install/index.js';
import type { CliIO } from './io.js';

interface GenerateFlags {
  set: string[];
  filename: string[];
  revision?: string;
  output?: string;
  manifests?: string;
  istioNamespace: string;
}

const collect = (v: string, acc: string[]): string[] => [...acc, v];

/** Writes each release's templates as DIR/<release>/<chart>/templates/<file>. */
async function writeOutputDir(dir: string, objects: readonly RenderedObject[]): Promise<string[]> {
  const byFile = new Map<string, RenderedObject[]>();
  for (const o of objects) {
    const file = path.join(dir, o.release, o.template);
    byFile.set(file, [...(byFile.get(file) ?? []), o]);
  }
  for (const [file, objs] of byFile) {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, formatManifest(objs));
  }
  return [...byFile.keys()];
}

export function registerManifest(program: Command, io: CliIO): void {
  const manifest = program.command('manifest').description('Commands related to the manifests meshctl installs');
  manifest
    .command('generate')
    .description('Generate the manifests meshctl install would apply (the charts rendered as helm template renders them)')
    .option('-s, --set <key=value>', "set a value, Helm's --set syntax (repeatable); --set profile=demo selects a profile", collect, [])
    .option('-f, --filename <file>', 'values overlay file (repeatable; later files win, --set wins over files)', collect, [])
    .option('-r, --revision <revision>', "control plane revision (Istio's `revision` value)")
    .option('-o, --output <dir>', 'write one file per template under this directory instead of printing')
    .option('-d, --manifests <dir>', 'charts directory (default: the charts shipped with meshctl)')
    .action(async (_o: GenerateFlags, cmd: Command) => {
      const flags = cmd.optsWithGlobals<GenerateFlags>();
      const opts: InstallRenderOptions = {
        sets: flags.set,
        valuesFiles: flags.filename.map((f) => path.resolve(io.cwd, f)),
        namespace: flags.istioNamespace,
        ...(flags.revision !== undefined ? { revision: flags.revision } : {}),
        ...(flags.manifests !== undefined ? { chartsDir: path.resolve(io.cwd, flags.manifests) } : {}),
      };
      const { objects } = await renderInstall(opts);
      if (flags.output === undefined) {
        io.stdout.write(formatManifest(objects));
        return;
      }
      const written = await writeOutputDir(path.resolve(io.cwd, flags.output), objects);
      io.stderr.write(`wrote ${objects.length} objects in ${written.length} files under ${flags.output}\n`);
    });
}
