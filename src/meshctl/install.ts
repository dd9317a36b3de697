/**
 * `meshctl install | upgrade | uninstall | verify-install`: istioctl's install verbs over the charts
 * in manifests/charts. The values (`--set`, `-f`, `--revision`, the profile) are rendered first by
 * the renderer (src/install/render.ts) and every object checked before anything is applied; the
 * apply engine (src/install/apply.ts) then applies, waits, prunes and reports.
 *
 * Output: progress on stderr (istioctl's `✔ Istiod installed`), the change report on stdout — one
 * line per object (`Deployment istio-system/istiod configured: spec.replicas`) and the totals.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import {
  applyInstall,
  hasInstall,
  InstallApplyError,
  InstallValidationError,
  uninstall,
  uninstallPlan,
  verifyInstall,
  type ObjectChange,
  componentOf,
  revisionLabelValue,
  describeRef,
  refOfServerObject,
  type InstallObject,
  Progress,
  formatChanges,
} from '../install/index.js';
import { parseGoDurationMs } from '../util/duration.js';
import { errorMessage } from '../util/errors.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';
import { clientVersion } from './version.js';
import { connectKube } from './kube-connect.js';

/** What the renderer is asked for (the seam with src/install/render.ts's InstallRenderOptions). */
export interface RenderRequest {
  readonly sets: readonly string[];
  /** Values files' contents are read by the renderer; these are paths resolved against the cwd. */
  readonly valuesFiles: readonly string[];
  readonly revision?: string;
  readonly namespace?: string;
}

/** Renders the charts for the values; throws (ValuesError naming the key) on bad values. */
export type InstallRenderer = (req: RenderRequest) => Promise<{ readonly objects: readonly InstallObject[] }>;

interface ValuesFlags {
  set: string[];
  filename: string[];
  revision?: string;
  istioNamespace: string;
  kubeconfig?: string;
  context?: string;
}

interface ApplyFlags extends ValuesFlags {
  skipConfirmation?: boolean;
  wait: boolean;
  readinessTimeout: string;
}

interface UninstallFlags {
  revision?: string;
  purge?: boolean;
  skipConfirmation?: boolean;
  kubeconfig?: string;
  context?: string;
}

const collect = (v: string, acc: string[]): string[] => [...acc, v];

function parseBool(flag: string): (v: string) => boolean {
  return (v) => {
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
    throw new UsageError(`invalid ${flag} "${v}": use true or false`);
  };
}

function valuesOptions(cmd: Command): Command {
  return cmd
    .option(
      '-s, --set <key=value>',
      'set a value (Helm --set syntax, e.g. profile=demo, pilot.replicaCount=2); repeatable, later wins',
      collect,
      [] as string[],
    )
    .option(
      '-f, --filename <file>',
      'a values overlay file (Helm values YAML); repeatable, later wins; --set wins over files',
      collect,
      [] as string[],
    )
    .option('-r, --revision <revision>', "control plane revision to install (Istio's `revision` value)");
}

function applyOptions(cmd: Command): Command {
  return valuesOptions(cmd)
    .option('-y, --skip-confirmation', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .option(
      '--wait [bool]',
      'wait for Deployments and DaemonSets to roll out before applying the webhook configurations (--wait=false: do not; CRDs are always waited on)',
      parseBool('--wait'),
      true,
    )
    .option('--readiness-timeout <duration>', 'how long to wait for resources to be ready (Go duration)', '5m0s');
}

const connect = connectKube;

async function render(renderer: InstallRenderer, flags: ValuesFlags, io: CliIO): Promise<readonly InstallObject[]> {
  // Unreadable files are named here, before the renderer parses them.
  for (const f of flags.filename) {
    try {
      await readFile(path.resolve(io.cwd, f));
    } catch (err) {
      io.stderr.write(`Error: cannot read values file ${f}: ${errorMessage(err)}\n`);
      throw new CliExit(EXIT.FAILURE);
    }
  }
  try {
    const { objects } = await renderer({
      sets: flags.set,
      valuesFiles: flags.filename.map((f) => path.resolve(io.cwd, f)),
      ...(flags.revision !== undefined ? { revision: flags.revision } : {}),
      namespace: flags.istioNamespace,
    });
    return objects;
  } catch (err) {
    io.stderr.write(`Error: ${errorMessage(err)}\nNothing was applied.\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}

/** The profile the values select (the last `--set profile=` wins), for the confirmation question. */
function profileOf(sets: readonly string[]): string {
  let profile = 'default';
  for (const s of sets) for (const part of s.split(',')) if (part.startsWith('profile=')) profile = part.slice('profile='.length);
  return profile;
}

/** Asks on the terminal, as istioctl does; with no terminal and no -y, refuses (nothing is done). */
async function confirm(io: CliIO, flags: { skipConfirmation?: boolean }, verb: string, question: string): Promise<void> {
  if (flags.skipConfirmation === true) return;
  if (!io.confirm)
    throw new UsageError(`${verb} asks for confirmation, but stdin is not a terminal: pass -y (--skip-confirmation) to proceed`);
  if (!(await io.confirm(`${question} Proceed? (y/N) `))) {
    io.stderr.write('Cancelled.\n');
    throw new CliExit(EXIT.FAILURE);
  }
}

const componentList = (objects: readonly InstallObject[]): string => {
  const titles = [...new Set(objects.map((o) => componentOf(o).title))];
  return titles.length <= 1 ? (titles[0] ?? 'none') : `${titles.slice(0, -1).join(', ')}, and ${titles.at(-1) ?? ''}`;
};

function readinessTimeoutMs(flags: ApplyFlags): number {
  const ms = parseGoDurationMs(flags.readinessTimeout);
  if (ms === undefined)
    throw new UsageError(`invalid --readiness-timeout "${flags.readinessTimeout}": use a Go duration such as 5m0s or 90s`);
  return ms;
}

/** install and upgrade: render, confirm, apply, report. */
async function runApply(mode: 'install' | 'upgrade', renderer: InstallRenderer, flags: ApplyFlags, io: CliIO): Promise<void> {
  const timeoutMs = readinessTimeoutMs(flags);
  const objects = await render(renderer, flags, io);
  const rest = connect(flags, io);
  if (mode === 'upgrade' && !(await cluster(io, () => hasInstall(rest, flags.revision)))) {
    io.stderr.write(
      `Error: no installation of revision "${revisionLabelValue(flags.revision)}" made by meshctl was found: use meshctl install\n`,
    );
    throw new CliExit(EXIT.FAILURE);
  }
  const verb = mode === 'install' ? 'install' : 'upgrade to';
  await confirm(
    io,
    flags,
    mode,
    `This will ${verb} the Istio ${clientVersion()} "${profileOf(flags.set)}" profile (with components: ${componentList(objects)}) into the cluster.`,
  );
  const progress = new Progress(io.stderr);
  let changes: readonly ObjectChange[];
  try {
    changes = await applyInstall(rest, objects, {
      ...(flags.revision !== undefined ? { revision: flags.revision } : {}),
      systemNamespace: flags.istioNamespace,
      wait: flags.wait,
      readinessTimeoutMs: timeoutMs,
      progress,
    });
  } catch (err) {
    if (err instanceof InstallApplyError && err.changes.length > 0) io.stdout.write(formatChanges(err.changes));
    // A validation error says itself that nothing was applied; an apply error's changes were printed above.
    const nothing = err instanceof InstallValidationError || err instanceof InstallApplyError ? '' : ' (nothing was applied)';
    io.stderr.write(`Error: ${mode} failed: ${errorMessage(err)}${nothing}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
  io.stdout.write(formatChanges(changes));
  progress.done(mode === 'install' ? 'Installation complete' : 'Upgrade complete');
}

/** Runs a cluster call; an unreachable or refusing server ends the command with its message. */
async function cluster<T>(io: CliIO, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    io.stderr.write(`Error: ${errorMessage(err)}\n`);
    throw new CliExit(EXIT.FAILURE);
  }
}

async function runUninstall(flags: UninstallFlags, io: CliIO): Promise<void> {
  if (flags.purge === true && flags.revision !== undefined)
    throw new UsageError('--purge and --revision cannot be used together: --purge removes every revision');
  if (flags.purge !== true && flags.revision === undefined)
    throw new UsageError('at least one of the --revision or --purge flags must be set (--revision default for an install without one)');
  const rest = connect(flags, io);
  const scope = flags.purge === true ? { allRevisions: true as const } : { revision: flags.revision };
  const plan = await cluster(io, () => uninstallPlan(rest, scope, flags.purge === true));
  if (plan.length === 0) {
    io.stdout.write(
      flags.purge === true
        ? 'Nothing to remove: no objects installed by meshctl.\n'
        : `Nothing to remove: no objects of revision "${revisionLabelValue(flags.revision)}" installed by meshctl.\n`,
    );
    return;
  }
  for (const o of plan) io.stderr.write(`  ${describeRef(refOfServerObject(o))}\n`);
  const what =
    flags.purge === true
      ? 'All Istio resources installed by meshctl, CRDs included,'
      : `The ${plan.length} resources of revision "${revisionLabelValue(flags.revision)}" above`;
  await confirm(io, flags, 'uninstall', `${what} will be removed from the cluster.`);
  const changes = await cluster(io, () => uninstall(rest, plan));
  io.stdout.write(formatChanges(changes));
  new Progress(io.stderr).done('Uninstall complete');
}

async function runVerify(renderer: InstallRenderer, flags: ValuesFlags, io: CliIO): Promise<void> {
  const objects = await render(renderer, flags, io);
  const rest = connect(flags, io);
  const results = await cluster(io, () => verifyInstall(rest, objects, flags.istioNamespace));
  const failed = results.filter((r) => r.problem !== undefined);
  for (const r of results) {
    const name = r.ref.namespace !== undefined ? `${r.ref.name}.${r.ref.namespace}` : r.ref.name;
    io.stdout.write(
      r.problem === undefined ? `✔ ${r.ref.kind}: ${name} checked successfully\n` : `✘ ${r.ref.kind}: ${name}: ${r.problem}\n`,
    );
  }
  if (failed.length > 0) {
    io.stderr.write(`Error: Istio installation NOT verified: ${failed.length} of ${results.length} resources missing or not ready\n`);
    throw new CliExit(EXIT.FAILURE);
  }
  io.stdout.write(`✔ Istio is installed and verified successfully\n`);
}

/** Registers install, upgrade, uninstall and verify-install; `renderer` turns the values into the objects to apply. */
export function registerInstall(program: Command, io: CliIO, renderer: InstallRenderer): void {
  applyOptions(
    program
      .command('install')
      .description("Install the meshpilot control plane (Istio's charts and profiles) into the cluster with server-side apply"),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  meshctl install --set profile=demo -y\n  meshctl install -f overlay.yaml --set pilot.replicaCount=2 --revision canary',
    )
    .action(async (_o: unknown, cmd: Command) => runApply('install', renderer, cmd.optsWithGlobals<ApplyFlags>(), io));
  applyOptions(
    program.command('upgrade').description('Apply a new values set over an existing install; prunes what the new values no longer render'),
  ).action(async (_o: unknown, cmd: Command) => runApply('upgrade', renderer, cmd.optsWithGlobals<ApplyFlags>(), io));
  program
    .command('uninstall')
    .description('Remove what meshctl install created: one revision (--revision), or everything including the CRDs (--purge)')
    .option('-r, --revision <revision>', "remove this revision's objects (`default` for an install without a revision); CRDs are kept")
    .option('--purge', "remove every revision's objects and the CRDs (all custom resources go with them)")
    .option('-y, --skip-confirmation', 'do not ask for confirmation (needed when stdin is not a terminal)')
    .action(async (_o: unknown, cmd: Command) => runUninstall(cmd.optsWithGlobals<UninstallFlags>(), io));
  valuesOptions(
    program
      .command('verify-install')
      .description(
        'Check that every object the values render exists and is ready (Deployments available, CRDs Established, webhooks present)',
      ),
  ).action(async (_o: unknown, cmd: Command) => runVerify(renderer, cmd.optsWithGlobals<ValuesFlags>(), io));
}
