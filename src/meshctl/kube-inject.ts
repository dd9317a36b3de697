/**
 * `meshctl kube-inject -f FILE`: istioctl's kube-inject — the sidecar added to the pod templates of
 * the workloads in a manifest, offline. The injector config, chart values and mesh config come from
 * files (istioctl's --injectConfigFile / --valuesFile / --meshConfigFile, i.e. the `config` and
 * `values` keys of the istio-sidecar-injector ConfigMap and the `mesh` key of the istio ConfigMap),
 * else Istio's defaults as meshpilot's injector ships them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import {
  builtinInjector,
  defaultMeshConfig,
  kubeInject,
  meshConfigFromYaml,
  parseInjectorConfig,
  parseInjectorValues,
  type InjectionConfig,
  CompiledTemplates,
} from '../inject/index.js';
import type { JsonValue } from '../util/json-patch.js';
import { marshalYaml } from '../template/index.js';
import { errorMessage } from '../util/errors.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';

interface KubeInjectOpts {
  filename?: string;
  output?: string;
  injectConfigFile?: string;
  valuesFile?: string;
  meshConfigFile?: string;
  revision?: string;
}

type JsonObject = { [k: string]: JsonValue };

export function registerKubeInject(program: Command, io: CliIO): void {
  program
    .command('kube-inject')
    .description(
      'Inject the Istio sidecar into Kubernetes workload manifests (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod, List …)',
    )
    .option('-f, --filename <file>', 'input manifest (- for stdin)')
    .option('-o, --output <file>', 'write the result here instead of stdout')
    .option('--injectConfigFile <file>', "injector config: the istio-sidecar-injector ConfigMap's `config` key")
    .option('--valuesFile <file>', "injection values: the istio-sidecar-injector ConfigMap's `values` key")
    .option('--meshConfigFile <file>', "mesh config: the istio ConfigMap's `mesh` key")
    .option('--revision <rev>', 'control plane revision the sidecars connect to', '')
    .addHelpText(
      'after',
      '\nExit codes: 0 injected (skipped workloads are warned about on stderr), 1 a file could not be read\nor a template failed, 64 bad usage, 65 the manifest could not be parsed.',
    )
    .action(async (_o: KubeInjectOpts, cmd: Command) => {
      const opts = cmd.optsWithGlobals<KubeInjectOpts>();
      if (opts.filename === undefined) throw new UsageError('no manifest given: use -f FILE (or -f - for stdin)');
      const read = async (file: string, what: string): Promise<string> => {
        try {
          return file === '-' && io.readStdin ? await io.readStdin() : await readFile(path.resolve(io.cwd, file), 'utf8');
        } catch (err) {
          io.stderr.write(`Error: cannot read ${what} ${file}: ${errorMessage(err)}\n`);
          throw new CliExit(EXIT.FAILURE);
        }
      };
      const config = await injectionConfig(opts, read, io);
      const text = await read(opts.filename, 'manifest');
      const parsed = parseAllDocuments(text);
      const docs: JsonObject[] = [];
      for (const [i, d] of parsed.entries()) {
        if (d.errors.length > 0) {
          io.stderr.write(`Error: ${opts.filename}: document ${i + 1}: ${d.errors[0]?.message ?? 'invalid YAML'}\n`);
          throw new CliExit(EXIT.DATA);
        }
        const v = d.toJS() as unknown;
        if (v === null || v === undefined) continue;
        if (typeof v !== 'object' || Array.isArray(v)) {
          io.stderr.write(`Error: ${opts.filename}: document ${i + 1} is not a Kubernetes object\n`);
          throw new CliExit(EXIT.DATA);
        }
        docs.push(v as JsonObject);
      }
      const out: string[] = [];
      for (const doc of docs) {
        try {
          const r = kubeInject(doc, config);
          for (const w of r.warnings) io.stderr.write(`${w}\n`);
          out.push(marshalYaml(r.object));
        } catch (err) {
          const meta = (doc.metadata ?? {}) as JsonObject;
          io.stderr.write(`Error: ${String(doc.kind ?? 'object')} ${String(meta.name ?? '')}: ${errorMessage(err)}\n`);
          throw new CliExit(EXIT.FAILURE);
        }
      }
      const result = out.join('---\n');
      if (opts.output !== undefined) await writeFile(path.resolve(io.cwd, opts.output), result);
      else io.stdout.write(result);
    });
}

async function injectionConfig(
  opts: KubeInjectOpts,
  read: (file: string, what: string) => Promise<string>,
  io: CliIO,
): Promise<InjectionConfig> {
  const builtin = builtinInjector();
  try {
    const injector =
      opts.injectConfigFile !== undefined
        ? parseInjectorConfig(await read(opts.injectConfigFile, 'injector config'), opts.injectConfigFile)
        : builtin.config;
    const values =
      opts.valuesFile !== undefined ? parseInjectorValues(await read(opts.valuesFile, 'values'), opts.valuesFile) : builtin.values;
    const mesh =
      opts.meshConfigFile !== undefined
        ? meshConfigFromYaml(await read(opts.meshConfigFile, 'mesh config'), opts.meshConfigFile)
        : defaultMeshConfig();
    return {
      injector,
      values,
      mesh,
      templates: new CompiledTemplates(injector, io.env),
      revision: opts.revision ?? '',
      // istiod's ENABLE_NATIVE_SIDECARS=auto with no nodes to ask (offline): native, as the injector decides it.
      nativeSidecars: io.env.ENABLE_NATIVE_SIDECARS !== 'false',
    };
  } catch (err) {
    if (err instanceof CliExit) throw err;
    io.stderr.write(`Error: ${errorMessage(err)}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}
