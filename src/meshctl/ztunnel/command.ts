/**
 * `meshctl ztunnel-config` (alias `zc`): istioctl's verbs over a ztunnel's /config_dump —
 * workload, service, policy, certificate, connections, all — with istioctl's aliases, flags,
 * tables and dumps (istioctl/pkg/ztunnelconfig). The dump comes from `-f`, from
 * `--ztunnel-admin host:port` (meshctl's own), or from a ztunnel pod of the cluster (source.ts).
 */
import { Option, type Command } from 'commander';
import { withProgress } from '../progress.js';
import { UsageError, type CliIO } from '../io.js';
import { connectKube } from '../kube-connect.js';
import { parseZtunnelDump, type ZtunnelDump } from './dump.js';
import { fetchAdminDump, fetchPodDump, readDumpFile, selectZtunnel, type PodRef } from './source.js';
import {
  certificateDump,
  certificateSummary,
  connectionsDump,
  connectionsSummary,
  fullDump,
  fullSummary,
  policyDump,
  policySummary,
  serviceDump,
  serviceSummary,
  workloadDump,
  workloadSummary,
  type DumpFormat,
} from './tables.js';

interface CommonFlags {
  output: 'short' | 'json' | 'yaml';
  proxyAdminPort: string;
  file?: string;
  node?: string;
  ztunnelAdmin?: string;
  namespace?: string;
  istioNamespace: string;
  kubeconfig?: string;
  context?: string;
}

interface VerbFlags extends CommonFlags {
  address?: string;
  workloadNamespace?: string;
  workloadNode?: string;
  serviceNamespace?: string;
  policyNamespace?: string;
  withHeaders?: boolean;
  direction?: string;
  raw?: boolean;
}

/** What a verb prints from a dump; `workload` is the pod the user named when it was not a ztunnel. */
type Render = (d: ZtunnelDump, f: VerbFlags, workload: PodRef | undefined) => string;

interface Verb {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly description: string;
  /** istioctl's enforceSinglePod: the output is that one ztunnel's own (certificates, connections). */
  readonly singlePod: boolean;
  readonly flags: (c: Command) => Command;
  readonly short: Render;
  readonly dump: (d: ZtunnelDump, f: VerbFlags, workload: PodRef | undefined, format: DumpFormat) => string;
}

const workloadFilter = (f: VerbFlags, w: PodRef | undefined): { address?: string; node?: string; namespace?: string; name?: string } => ({
  ...(f.address !== undefined ? { address: f.address } : {}),
  ...(f.workloadNode !== undefined ? { node: f.workloadNode } : {}),
  ...(w ? { namespace: w.namespace, name: w.name } : f.workloadNamespace !== undefined ? { namespace: f.workloadNamespace } : {}),
});

const connFilter = (f: VerbFlags, w: PodRef | undefined): { namespace?: string; direction?: string; raw?: boolean; workload?: string } => ({
  ...(w ? { namespace: w.namespace, workload: w.name } : f.workloadNamespace !== undefined ? { namespace: f.workloadNamespace } : {}),
  ...(f.direction !== undefined ? { direction: f.direction } : {}),
  ...(f.raw ? { raw: true } : {}),
});

const VERBS: readonly Verb[] = [
  {
    name: 'workload',
    aliases: ['w', 'workloads'],
    description: 'Retrieves workload configuration for the specified Ztunnel pod.',
    singlePod: false,
    flags: (c) =>
      c
        .option('--address <ip>', 'Filter workloads by address field')
        .option('--workload-namespace <ns>', 'Filter workloads by namespace field')
        .option('--workload-node <node>', 'Filter workloads by node'),
    short: (d, f, w) => workloadSummary(d, workloadFilter(f, w)),
    dump: (d, f, w, fmt) => workloadDump(d, workloadFilter(f, w), fmt),
  },
  {
    name: 'service',
    aliases: ['services', 's', 'svc'],
    description: 'Retrieves services for the specified Ztunnel pod.',
    singlePod: false,
    flags: (c) => c.option('--service-namespace <ns>', 'Filter services by namespace field'),
    short: (d, f) => serviceSummary(d, f.serviceNamespace),
    dump: (d, f, _w, fmt) => serviceDump(d, f.serviceNamespace, fmt),
  },
  {
    name: 'policy',
    aliases: ['policies', 'p', 'pol'],
    description: 'Retrieves policies for the specified Ztunnel pod.',
    singlePod: false,
    flags: (c) => c.option('--policy-namespace <ns>', 'Filter policies by namespace field'),
    short: (d, f) => policySummary(d, f.policyNamespace),
    dump: (d, f, _w, fmt) => policyDump(d, f.policyNamespace, fmt),
  },
  {
    name: 'certificate',
    aliases: ['certificates', 'certs', 'cert'],
    description: 'Retrieves certificate for the specified Ztunnel pod.',
    singlePod: true,
    flags: (c) => c,
    short: (d) => certificateSummary(d),
    dump: (d, _f, _w, fmt) => certificateDump(d, fmt),
  },
  {
    name: 'connections',
    aliases: ['cons'],
    description: 'Retrieves connections for the specified Ztunnel pod.',
    singlePod: true,
    flags: (c) =>
      c
        .option('--direction <dir>', 'Filter workloads by direction (inbound or outbound)')
        .option('--raw', 'If set, show IP addresses instead of names')
        .option('--workload-namespace <ns>', 'Filter workloads by namespace field'),
    short: (d, f, w) => connectionsSummary(d, connFilter(f, w)),
    dump: (d, f, w, fmt) => connectionsDump(d, connFilter(f, w), fmt),
  },
  {
    name: 'all',
    aliases: [],
    description: 'Retrieves all configuration for the specified Ztunnel pod.',
    singlePod: false,
    flags: (c) => c.option('--with-headers', 'Print summary with headers'),
    short: (d, f) => fullSummary(d, f.withHeaders === true),
    dump: (d, _f, _w, fmt) => fullDump(d, fmt),
  },
];

function adminPort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new UsageError(`invalid --proxy-admin-port "${v}": give a port number (1-65535)`);
  return n;
}

/** istioctl's validateArgs: one source at most (meshctl's --ztunnel-admin counts as one). */
function checkSources(f: CommonFlags, target: string | undefined): void {
  const given = [f.file !== undefined, target !== undefined, f.node !== undefined, f.ztunnelAdmin !== undefined].filter(Boolean).length;
  if (given > 1) throw new UsageError('at most one of --file, --node, --ztunnel-admin, or pod name must be passed');
}

async function loadDump(
  verb: Verb,
  f: CommonFlags,
  target: string | undefined,
  io: CliIO,
): Promise<{ dump: ZtunnelDump; workload?: PodRef }> {
  if (f.file !== undefined) return { dump: parseZtunnelDump(await readDumpFile(f.file, io), f.file) };
  if (f.ztunnelAdmin !== undefined) {
    const admin = f.ztunnelAdmin;
    const text = await withProgress(io.stderr, `Asking the ztunnel admin at ${admin} for its config_dump`, () => fetchAdminDump(admin));
    return { dump: parseZtunnelDump(text, admin) };
  }
  const port = adminPort(f.proxyAdminPort);
  const rest = connectKube(f, io);
  const chosen = await selectZtunnel(rest, {
    ...(target !== undefined ? { target } : {}),
    ...(f.node !== undefined ? { node: f.node } : {}),
    namespace: f.namespace ?? f.istioNamespace,
    istioNamespace: f.istioNamespace,
    enforceSinglePod: verb.singlePod,
  });
  const text = await withProgress(io.stderr, `Asking ztunnel ${chosen.ztunnel.name}.${chosen.ztunnel.namespace} for its config_dump`, () =>
    fetchPodDump(rest, chosen.ztunnel, port),
  );
  return {
    dump: parseZtunnelDump(text, `${chosen.ztunnel.name}.${chosen.ztunnel.namespace}`),
    ...(chosen.workload ? { workload: chosen.workload } : {}),
  };
}

const defaultIO: CliIO = { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };

/** Registers `ztunnel-config` on the meshctl program. */
export function registerZtunnelConfig(program: Command, io: CliIO = defaultIO): void {
  const zc = program
    .command('ztunnel-config')
    .alias('zc')
    .description(
      'Update or retrieve current Ztunnel configuration (from a ztunnel pod, --ztunnel-admin host:port, or -f config_dump.json).',
    );
  for (const verb of VERBS) {
    const cmd = zc
      .command(verb.name)
      .aliases([...verb.aliases])
      .description(verb.description)
      .argument('[pod]', "a ztunnel pod, or a workload pod (its node's ztunnel, showing that workload): [<type>/]<name>[.<namespace>]")
      .option('--proxy-admin-port <port>', 'Ztunnel proxy admin port', '15000')
      .addOption(
        new Option('-o, --output <format>', 'Output format: one of json|yaml|short').choices(['short', 'json', 'yaml']).default('short'),
      )
      .option('--node <node>', 'Filter workloads by node field (the ztunnel of that node)')
      .option('-f, --file <file>', 'Ztunnel config dump JSON file (- for stdin)')
      .option(
        '--ztunnel-admin <host:port>',
        'read the config_dump from this ztunnel admin address instead of a cluster (port default 15000)',
      );
    verb.flags(cmd).action(async (target: string | undefined, _o: VerbFlags, c: Command) => {
      const f = c.optsWithGlobals<VerbFlags>();
      checkSources(f, target);
      const { dump, workload } = await loadDump(verb, f, target, io);
      io.stdout.write(f.output === 'short' ? verb.short(dump, f, workload) : verb.dump(dump, f, workload, f.output));
    });
  }
}
