/** `meshctl analyze`: istioctl analyze over files and, with a kubeconfig or --use-kube=true, the live cluster. */
import { Option, type Command } from 'commander';
import { formatConfigError } from '../../config/index.js';
import { errorMessage } from '../../util/errors.js';
import { ALL_ANALYZERS } from '../analyzers/index.js';
import { CliExit, colourEnabled, EXIT, UsageError, type CliIO } from '../io.js';
import { withProgress } from '../progress.js';
import { formatMessages, type OutputFormat } from './format.js';
import type { ClusterObjects } from './kube-loader.js';
import { loadInputs } from './loader.js';
import type { RemoteCluster, ResourceRef, Snapshot } from './model.js';
import { levelRank, parseLevel, type Level } from './messages.js';
import { parseSuppression, runAnalyzers, type Suppression } from './run.js';

interface AnalyzeOpts {
  recursive?: boolean;
  allNamespaces?: boolean;
  output: OutputFormat;
  failureThreshold: string;
  outputThreshold: string;
  suppress: string[];
  listAnalyzers?: boolean;
  useKube?: string;
  namespace?: string;
  istioNamespace: string;
  kubeconfig?: string;
  context?: string;
  meshConfigFile?: string;
  meshNetworksFile?: string;
  remoteContexts: string[];
}

function level(flag: string, v: string): Level {
  const l = parseLevel(v);
  if (!l) throw new UsageError(`invalid ${flag} "${v}": use one of Info, Warning, Error`);
  return l;
}

export function listAnalyzers(): string {
  let out = 'Available analyzers:\n';
  for (const a of ALL_ANALYZERS) out += `* ${a.name}:\n    ${a.description} (${a.messages.map((m) => `${m.code} ${m.name}`).join(', ')})\n`;
  return out;
}

async function readCluster(opts: AnalyzeOpts, io: CliIO): Promise<ClusterObjects> {
  const where = opts.kubeconfig ?? 'the default kubeconfig';
  try {
    // Imported here: file-only analysis (CI loops) does not load the Kubernetes client.
    const [{ loadKubeConfig }, { loadCluster }] = await Promise.all([import('../../kube/index.js'), import('./kube-loader.js')]);
    const kc = loadKubeConfig({
      ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
      ...(opts.context !== undefined ? { context: opts.context } : {}),
      env: io.env,
    });
    return await withProgress(io.stderr, `Reading the cluster (${where})`, () => loadCluster(kc));
  } catch (err) {
    io.stderr.write(`Error: cannot read the cluster (${where}): ${errorMessage(err)}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}

/**
 * The remote clusters --remote-contexts names, each a context of the same kubeconfig (as istioctl:
 * an unknown context is an error before anything is read). Their Services only.
 */
async function readRemoteClusters(opts: AnalyzeOpts, io: CliIO): Promise<RemoteCluster[]> {
  if (opts.remoteContexts.length === 0) return [];
  const where = opts.kubeconfig ?? 'the default kubeconfig';
  try {
    const [{ loadKubeConfig }, { loadRemoteServices }] = await Promise.all([import('../../kube/index.js'), import('./kube-loader.js')]);
    const base = { ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}), env: io.env };
    const configs = opts.remoteContexts.map((context) => ({ context, kc: loadKubeConfig({ ...base, context }) }));
    return await withProgress(io.stderr, `Reading the remote clusters (${opts.remoteContexts.join(', ')})`, () =>
      Promise.all(configs.map(({ context, kc }) => loadRemoteServices(kc, context))),
    );
  } catch (err) {
    io.stderr.write(`Error: cannot read the remote clusters (${where}): ${errorMessage(err)}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}

/** The files' objects plus the cluster's, a file's version winning over the cluster's object of the same kind and name (as istioctl). */
function withCluster(files: Snapshot, cluster: ClusterObjects): Snapshot {
  const key = (r: { kind: string; namespace: string; name: string }): string => `${r.kind}/${r.namespace}/${r.name}`;
  const lists = [
    'invalid',
    'warnings',
    'services',
    'pods',
    'namespaces',
    'deployments',
    'envoyFilters',
    'telemetries',
    'objects',
    'statusObjects',
  ] as const;
  const fromFiles = new Set([...files.configs.map((c) => key(c.meta)), ...lists.flatMap((l) => files[l].map((o) => key(o.ref)))]);
  const merge = <T extends { ref: ResourceRef }>(a: readonly T[], b: readonly T[]): T[] => [
    ...a,
    ...b.filter((o) => !fromFiles.has(key(o.ref))),
  ];
  return {
    ...files,
    configs: [...files.configs, ...cluster.configs.filter((c) => !fromFiles.has(key(c.meta)))],
    invalid: merge(files.invalid, cluster.invalid),
    warnings: merge(files.warnings, cluster.warnings),
    services: merge(files.services, cluster.services),
    pods: merge(files.pods, cluster.pods),
    namespaces: merge(files.namespaces, cluster.namespaces),
    deployments: merge(files.deployments, cluster.deployments),
    envoyFilters: merge(files.envoyFilters, cluster.envoyFilters),
    telemetries: merge(files.telemetries, cluster.telemetries),
    objects: merge(files.objects, cluster.objects),
    statusObjects: merge(files.statusObjects, cluster.statusObjects),
    lineOf: (r, p) => files.lineOf(r, p),
  };
}

export function registerAnalyze(program: Command, io: CliIO): void {
  program
    .command('analyze')
    .description('Analyze Istio configuration and print validation messages')
    .argument('[files...]', 'files, directories or - (stdin) to analyze')
    .option('-R, --recursive', 'process directory arguments recursively')
    .option('-A, --all-namespaces', 'analyze all namespaces')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['log', 'json', 'yaml']).default('log'))
    .option('--failure-threshold <level>', 'the severity level of messages that cause a non-zero exit code (Info, Warning, Error)', 'Error')
    .option('--output-threshold <level>', 'the severity level of messages to print (Info, Warning, Error)', 'Info')
    .option(
      '-S, --suppress <code=resource>',
      'suppress messages by code and resource, e.g. "IST0102=Namespace default"; repeatable',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('-L, --list-analyzers', 'list the analyzers available to run')
    .option('--meshConfigFile <file>', 'overrides the mesh config values with those of this file (MeshConfig YAML)')
    .option('--meshNetworksFile <file>', 'overrides the mesh networks values with those of this file (MeshNetworks YAML)')
    .option(
      '--use-kube <bool>',
      'also analyze the live cluster (default: true when -k/--kubeconfig is given); files win over cluster objects of the same name',
    )
    .option(
      '--remote-contexts <context>',
      'kubeconfig context of a remote cluster for multi-cluster analysis (its Services); repeatable. Not to be confused with --context',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .addHelpText(
      'after',
      '\nExit codes: 0 no issues at the failure threshold, 79 issues found, 64 bad usage, 65 a file could not be parsed,\n1 the cluster could not be read.',
    )
    .action(async (files: string[], _o: AnalyzeOpts, cmd: Command) => {
      const opts = cmd.optsWithGlobals<AnalyzeOpts>();
      if (opts.listAnalyzers) {
        io.stdout.write(listAnalyzers());
        return;
      }
      const failure = level('--failure-threshold', opts.failureThreshold);
      const outputAt = level('--output-threshold', opts.outputThreshold);
      const suppress: Suppression[] = [];
      for (const s of opts.suppress) {
        const r = parseSuppression(s);
        if (typeof r === 'string') throw new UsageError(r);
        suppress.push(r);
      }
      if (opts.useKube !== undefined && opts.useKube !== 'true' && opts.useKube !== 'false')
        throw new UsageError(`--use-kube "${opts.useKube}": use true or false`);
      const useKube = opts.useKube === 'true' || (opts.useKube === undefined && opts.kubeconfig !== undefined);
      if (files.length === 0 && !useKube)
        throw new UsageError('nothing to analyze: pass FILE, DIR or -, or a cluster with -k KUBECONFIG (--use-kube=true)');
      if (opts.allNamespaces && opts.namespace !== undefined)
        throw new UsageError('--namespace and --all-namespaces cannot be used together');
      const namespace = opts.namespace ?? 'default';
      if (opts.remoteContexts.length > 0 && !useKube)
        throw new UsageError('--remote-contexts needs the live cluster (-k or --use-kube=true)');

      const loadIn = {
        args: files,
        recursive: opts.recursive === true,
        defaultNamespace: namespace,
        cwd: io.cwd,
        rootNamespace: opts.istioNamespace,
      };
      const meshFiles = {
        ...(opts.meshConfigFile !== undefined ? { meshConfigFile: opts.meshConfigFile } : {}),
        ...(opts.meshNetworksFile !== undefined ? { meshNetworksFile: opts.meshNetworksFile } : {}),
      };
      let fromFiles;
      try {
        fromFiles = await loadInputs({
          ...loadIn,
          ...meshFiles,
          defaultResources: !useKube,
          ...(io.readStdin ? { readStdin: io.readStdin } : {}),
        });
      } catch (err) {
        io.stderr.write(`Error: ${errorMessage(err)}\n`);
        throw new CliExit(EXIT.DATA);
      }
      const { parseErrors } = fromFiles;
      // Remote clusters first: a context missing from the kubeconfig fails before the primary is read.
      const remoteClusters = await readRemoteClusters(opts, io);
      const primary = useKube ? withCluster(fromFiles.snapshot, await readCluster(opts, io)) : fromFiles.snapshot;
      const snapshot = { ...primary, remoteClusters };
      for (const e of parseErrors) io.stderr.write(`Error: failed to parse ${formatConfigError(e)}\n`);

      const msgs = runAnalyzers(ALL_ANALYZERS, snapshot, {
        namespace: opts.allNamespaces ? undefined : namespace,
        suppress,
        onAnalyzerError: (name, err) => io.stderr.write(`Error: analyzer ${name} failed: ${errorMessage(err)}\n`),
      });
      const shown = msgs.filter((m) => levelRank(m.type.level) >= levelRank(outputAt));
      const target = opts.allNamespaces ? 'all namespaces' : `namespace: ${namespace}`;
      if (opts.output !== 'log') io.stdout.write(formatMessages(shown, opts.output, false));
      else if (shown.length > 0) io.stdout.write(formatMessages(shown, 'log', colourEnabled(io)));
      else if (parseErrors.length === 0) io.stderr.write(`\u2714 No validation issues found when analyzing ${target}.\n`);

      if (parseErrors.length > 0) throw new CliExit(EXIT.DATA);
      // As istioctl: the exit code looks at every message, not only the printed ones.
      if (msgs.some((m) => levelRank(m.type.level) >= levelRank(failure))) {
        io.stderr.write(
          `Error: Analyzers found issues when analyzing ${target}.\nSee https://istio.io/latest/docs/reference/config/analysis for more information about causes and resolutions.\n`,
        );
        throw new CliExit(EXIT.ISSUES);
      }
    });
}
