/**
 * `meshctl waypoint generate|apply|list|status|delete`: istioctl's waypoint verbs
 * (istioctl/pkg/waypoint), with its flags, messages and tables, over the cluster or — with
 * `--configDir` — a meshpilot config directory (store.ts).
 */
import { Option, type Command } from 'commander';
import {
  DATAPLANE_MODE_LABEL,
  USE_WAYPOINT_LABEL,
  WAYPOINT_FOR_LABEL,
  REVISION_LABEL,
  WAYPOINT_GATEWAY_CLASS,
} from '../../config/constants.js';
import { parseGoDurationMs } from '../../util/duration.js';
import { MeshError } from '../../util/errors.js';
import { UsageError, type CliIO } from '../io.js';
import { connectKubeContext } from '../kube-connect.js';
import { tabwrite } from '../proxy/tabwriter.js';
import { makeWaypoint, TRAFFIC_TYPES, waypointName, waypointYaml } from './gateway.js';
import { DirWaypointStore, KubeWaypointStore, type Condition, type StoredGateway, type WaypointStore } from './store.js';

interface WaypointFlags {
  name?: string;
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  configDir?: string;
  for?: string;
  revision?: string;
  enrollNamespace?: boolean;
  overwrite?: boolean;
  wait?: boolean;
  waypointTimeout: string;
  allNamespaces?: boolean;
  all?: boolean;
}

/** Polling for Programmed, as istioctl: once a second. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}
const realClock: Clock = { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) };
const POLL_MS = 1000;

/** The store, and the namespace of -n, else the kubeconfig context's, else `default` (istioctl's NamespaceOrDefault). */
function target(f: WaypointFlags, io: CliIO): { s: WaypointStore; ns: string } {
  if (f.configDir !== undefined) return { s: new DirWaypointStore(f.configDir), ns: f.namespace ?? 'default' };
  const { rest, namespace } = connectKubeContext(f, io);
  return { s: new KubeWaypointStore(rest), ns: f.namespace ?? namespace ?? 'default' };
}

function timeoutMs(f: WaypointFlags): number {
  const ms = parseGoDurationMs(f.waypointTimeout);
  if (ms === undefined || ms < 0)
    throw new UsageError(`invalid --waypoint-timeout "${f.waypointTimeout}": give a duration, e.g. 90s or 2m`);
  return ms;
}

const isWaypoint = (g: StoredGateway): boolean => g.spec?.gatewayClassName === WAYPOINT_GATEWAY_CLASS;
const byNamespaceName = (a: StoredGateway, b: StoredGateway): number =>
  a.metadata.namespace < b.metadata.namespace
    ? -1
    : a.metadata.namespace > b.metadata.namespace
      ? 1
      : a.metadata.name < b.metadata.name
        ? -1
        : a.metadata.name > b.metadata.name
          ? 1
          : 0;
const programmed = (g: StoredGateway | undefined): boolean =>
  (g?.status?.conditions ?? []).some((c) => c.type === 'Programmed' && c.status === 'True');

async function apply(f: WaypointFlags, io: CliIO, clock: Clock): Promise<void> {
  const out = (s: string): unknown => io.stdout.write(s);
  if (f.configDir !== undefined && f.enrollNamespace)
    throw new UsageError(
      '--enroll-namespace needs a cluster: namespaces are not read from a config directory (label the WorkloadEntries and ServiceEntries istio.io/use-waypoint instead)',
    );
  const { s, ns } = target(f, io);
  const nsLabels = await s.namespaceLabels(ns);
  if (f.enrollNamespace) {
    if (!f.overwrite && (nsLabels[USE_WAYPOINT_LABEL] ?? '') !== '') {
      out(
        `⚠️ Warning: namespace (${ns}) already has an enrolled Waypoint. Consider adding the \`--overwrite\` flag to your apply command.\n`,
      );
      return;
    }
    if (nsLabels[DATAPLANE_MODE_LABEL] !== 'ambient')
      out(
        `⚠️ Warning: namespace is not enrolled in ambient. Consider running\t\`kubectl label namespace ${ns} istio.io/dataplane-mode=ambient\`\n`,
      );
  }
  const gw = makeWaypoint({
    namespace: ns,
    ...(f.name !== undefined ? { name: f.name } : {}),
    ...(f.for ? { trafficType: f.for } : {}),
    ...(f.revision ? { revision: f.revision } : {}),
  });
  await s.apply({ ...gw, metadata: { ...gw.metadata, namespace: ns } });
  out(`✅ waypoint ${ns}/${gw.metadata.name} applied\n`);
  if (f.wait) {
    const limit = timeoutMs(f);
    const start = clock.now();
    for (;;) {
      await clock.sleep(POLL_MS);
      if (programmed(await s.get(ns, gw.metadata.name))) break;
      if (clock.now() - start > limit)
        throw new MeshError('DEADLINE_EXCEEDED', `timed out while waiting for waypoint\t${ns}/${gw.metadata.name}`);
    }
    out(`✅ waypoint ${ns}/${gw.metadata.name} is ready!\n`);
  }
  if (f.enrollNamespace) {
    await s.setNamespaceLabel(ns, USE_WAYPOINT_LABEL, gw.metadata.name);
    out(`✅ namespace ${ns} labeled with "${USE_WAYPOINT_LABEL}: ${gw.metadata.name}"\n`);
  }
}

async function list(f: WaypointFlags, io: CliIO): Promise<void> {
  const { s, ns } = target(f, io);
  const gws = await s.list(f.allNamespaces ? undefined : ns);
  if (gws.length === 0) {
    io.stdout.write('No waypoints found.\n');
    return;
  }
  const rows = [
    f.allNamespaces ? ['NAMESPACE', 'NAME', 'REVISION', 'TRAFFIC TYPE', 'PROGRAMMED'] : ['NAME', 'REVISION', 'TRAFFIC TYPE', 'PROGRAMMED'],
  ];
  for (const g of gws.filter(isWaypoint).sort(byNamespaceName)) {
    const labels = g.metadata.labels ?? {};
    // The last Programmed condition's status, False without one.
    const status = (g.status?.conditions ?? []).filter((c) => c.type === 'Programmed').at(-1)?.status ?? 'False';
    const row = [g.metadata.name, labels[REVISION_LABEL] || 'default', labels[WAYPOINT_FOR_LABEL] || 'none', status];
    rows.push(f.allNamespaces ? [g.metadata.namespace, ...row] : row);
  }
  io.stdout.write(tabwrite(rows, 5));
}

async function status(f: WaypointFlags, io: CliIO, clock: Clock): Promise<void> {
  if (f.configDir !== undefined)
    throw new UsageError(
      'status needs a cluster: Gateway status is written to the cluster only (use list --configDir for the waypoints of a directory)',
    );
  const t = target(f, io);
  const s = t.s;
  const ns = f.allNamespaces ? undefined : t.ns;
  const gws = await s.list(ns);
  if (gws.length === 0) {
    io.stdout.write('No waypoints found.\n');
    return;
  }
  const limit = timeoutMs(f);
  const rows = [
    ns === undefined ? ['NAMESPACE', 'NAME', 'STATUS', 'TYPE', 'REASON', 'MESSAGE'] : ['NAME', 'STATUS', 'TYPE', 'REASON', 'MESSAGE'],
  ];
  const start = clock.now();
  // istioctl keeps the condition it looked at last across polls and Gateways: the Programmed one when
  // found, else the last of the list.
  let cond: Condition = {};
  for (const gw of gws.filter(isWaypoint).sort(byNamespaceName)) {
    // One row per poll until the waypoint is programmed (or at once with --wait=false), as istioctl prints them.
    for (;;) {
      await clock.sleep(POLL_MS);
      const cur = await s.get(gw.metadata.namespace, gw.metadata.name);
      const conds = cur?.status?.conditions ?? [];
      const found = conds.find((c) => c.type === 'Programmed' && c.status === 'True');
      cond = found ?? conds.at(-1) ?? cond;
      const name = cur?.metadata.name ?? '';
      const cells = [name, cond.status ?? '', cond.type ?? '', cond.reason ?? '', cond.message ?? ''];
      rows.push(ns === undefined ? [cur?.metadata.namespace ?? '', ...cells] : cells);
      if (!f.wait || found) break;
      if (clock.now() - start > limit)
        throw new MeshError(
          'DEADLINE_EXCEEDED',
          `failed to print waypoint status: timed out while retrieving status for waypoint\t${gw.metadata.namespace}/${gw.metadata.name}`,
        );
    }
  }
  io.stdout.write(tabwrite(rows, 5));
}

async function del(names: readonly string[], f: WaypointFlags, io: CliIO): Promise<void> {
  if ((f.all || f.revision) && names.length > 0) throw new UsageError('cannot specify waypoint names when deleting all waypoints');
  if (!(f.all || f.revision) && names.length === 0)
    throw new UsageError('must specify a waypoint name or delete all using --all or delete specific revision using --revision');
  const { s, ns } = target(f, io);
  let targets: string[];
  if (names.length === 0) {
    targets = (await s.list(ns, f.revision ? `${REVISION_LABEL}=${f.revision}` : undefined)).filter(isWaypoint).map((g) => g.metadata.name);
  } else {
    const waypoints = new Set((await s.list(ns)).filter(isWaypoint).map((g) => g.metadata.name));
    targets = [];
    for (const n of names) {
      if (waypoints.has(n)) targets.push(n);
      else io.stdout.write(`waypoint ${ns}/${n} not found\n`);
    }
  }
  const errors: string[] = [];
  for (const n of targets) {
    try {
      io.stdout.write((await s.delete(ns, n)) ? `waypoint ${ns}/${n} deleted\n` : `waypoint ${ns}/${n} not found\n`);
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  if (errors.length > 0) throw new MeshError('INTERNAL', errors.join('; '));
}

const defaultIO: CliIO = { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };

const withTarget = (c: Command): Command =>
  c.option(
    '--configDir <dir>',
    'a meshpilot config directory to use instead of the cluster (apply writes waypoint-<ns>-<name>.yaml there)',
  );

const forOption = (): Option => new Option('--for <type>', `Specify the traffic type [${TRAFFIC_TYPES.join(' ')}] for the waypoint`);
const boolFlag = (v: string | undefined): boolean => {
  if (v === undefined || v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`invalid boolean "${v}": use true or false`);
};

/** Registers `waypoint` on the meshctl program. */
export function registerWaypoint(program: Command, io: CliIO = defaultIO, clock: Clock = realClock): void {
  const wp = program
    .command('waypoint')
    .description('Manage waypoint configuration')
    .option('--name <name>', 'name of the waypoint', 'waypoint');
  const flags = (c: Command): WaypointFlags => c.optsWithGlobals<WaypointFlags>();

  wp.command('generate')
    .description('Generate a waypoint configuration as YAML')
    .addOption(forOption())
    .option('-r, --revision <rev>', 'The revision to label the waypoint with')
    .action((_o: unknown, c: Command) => {
      const f = flags(c);
      // Without -n the generated Gateway names no namespace (kubectl apply -n chooses it).
      const gw = makeWaypoint({
        namespace: f.namespace ?? '',
        name: waypointName(f.name),
        ...(f.for ? { trafficType: f.for } : {}),
        ...(f.revision ? { revision: f.revision } : {}),
      });
      io.stdout.write(waypointYaml(gw));
    });

  withTarget(
    wp
      .command('apply')
      .description('Apply a waypoint configuration to the cluster (or, with --configDir, to a meshpilot config directory)')
      .addOption(forOption())
      .option('--enroll-namespace', 'If set, the namespace will be labeled with the waypoint name')
      .option('--overwrite', 'Overwrite the existing Waypoint used by the namespace')
      .option('-r, --revision <rev>', 'The revision to label the waypoint with')
      .option('-w, --wait', 'Wait for the waypoint to be ready')
      .option('--waypoint-timeout <duration>', 'Timeout for waiting for waypoint ready', '1m30s'),
  ).action((_o: unknown, c: Command) => apply(flags(c), io, clock));

  withTarget(
    wp
      .command('list')
      .description('List managed waypoint configurations in the cluster')
      .option('-A, --all-namespaces', 'List all waypoints in all namespaces'),
  ).action((_o: unknown, c: Command) => list(flags(c), io));

  withTarget(
    wp
      .command('status')
      .description('Show the status of waypoints in the cluster')
      .option('-w, --wait [bool]', 'Wait for the waypoint to be ready (--wait=false: print the status once)', boolFlag, true)
      .option('--waypoint-timeout <duration>', 'Timeout for retrieving status for waypoint', '1m30s')
      .option('-A, --all-namespaces', 'Show the status of waypoints in all namespaces'),
  ).action((_o: unknown, c: Command) => status(flags(c), io, clock));

  withTarget(
    wp
      .command('delete')
      .description('Delete a waypoint configuration from the cluster')
      .argument('[names...]', 'waypoint names')
      .option('--all', 'Delete all waypoints in the namespace')
      .option('-r, --revision <rev>', 'Delete the specified version of the waypoint in the namespace'),
  ).action((names: string[], _o: unknown, c: Command) => del(names, flags(c), io));
}
