/** Command line of bench/suite.ts, parsed once into the suite's plan. */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { REPO_ROOT } from '../../test/support/paths.js';
import type { MeshSize } from './mesh.js';
import type { Scenario } from './scenario.js';
import { SCENARIOS, scenarioByName } from './scenarios/index.js';
import { STEP_NAMES, type RestartOptions, type StepName } from './steps.js';

export const USAGE = `npm run bench:suite -- [options]

  --scenarios a,b,…        ${SCENARIOS.map((s) => s.name).join(', ')} (default: all)
  --protocol sotw|delta|both   ADS flavour of the simulated proxies (default sotw); --delta = --protocol delta
  --quick                  small sizes (a smoke run of every scenario, under two minutes)
  --scale                  the headline scale: http, 1000 services, 2000 sidecars, no proxyless clients
  --services N --instances N --namespaces N     mesh size (instances = WorkloadEntries per service)
  --sidecars N --proxyless N --routers N        simulated proxies
  --sidecar-scope          a Sidecar per namespace (egress ./* and istio-system/*)
  --steps a,b,…            ${STEP_NAMES.join(', ')} (default: all)
  --restart N --restart-batch N --restart-interval-ms N   rolling restart (default 50 workloads, 10 per batch, 200 ms apart)
  --load-gens N            load-generator processes (default 1, 2 from 5000 proxies)
  --sync-timeout-ms N      give up on the first sync (default 60 s + 20 ms per proxy)
  --converge-timeout-ms N --quiet-ms N --min-settle-ms N   per churn step (defaults 20000, 500, 1000)
  --run-deadline-ms N      hard cap per scenario run (default 120 s + 30 ms per proxy)
  --deadline-ms N          hard cap for the whole suite (default 570 s; 1800 s with --scale or size flags)
  --max-rss-mib N          abort a run when meshpilot + load generators exceed this RSS (default: half the machine's memory)
  --env KEY=VALUE          extra environment for meshpilot (repeatable)
  --dist                   build (npm run build) and run dist/src/cli/meshpilot.js with plain node, as shipped,
                           instead of the TypeScript source under tsx (whose loader holds ~100 MiB of RSS)
  --out FILE               JSON results (default bench/results/suite.json)
  --quiet                  no progress on stderr`;

const OPTIONS = {
  scenarios: { type: 'string' },
  protocol: { type: 'string', default: 'sotw' },
  delta: { type: 'boolean', default: false },
  quick: { type: 'boolean', default: false },
  scale: { type: 'boolean', default: false },
  services: { type: 'string' },
  instances: { type: 'string' },
  namespaces: { type: 'string' },
  sidecars: { type: 'string' },
  proxyless: { type: 'string' },
  routers: { type: 'string' },
  'sidecar-scope': { type: 'boolean', default: false },
  steps: { type: 'string' },
  restart: { type: 'string', default: '50' },
  'restart-batch': { type: 'string', default: '10' },
  'restart-interval-ms': { type: 'string', default: '200' },
  'load-gens': { type: 'string' },
  'sync-timeout-ms': { type: 'string' },
  'converge-timeout-ms': { type: 'string', default: '20000' },
  'quiet-ms': { type: 'string', default: '500' },
  'min-settle-ms': { type: 'string', default: '1000' },
  'run-deadline-ms': { type: 'string' },
  'deadline-ms': { type: 'string' },
  'max-rss-mib': { type: 'string', default: String(Math.round(totalmem() / 2 / 1048576)) },
  env: { type: 'string', multiple: true, default: [] as string[] },
  dist: { type: 'boolean', default: false },
  out: { type: 'string', default: join(REPO_ROOT, 'bench/results/suite.json') },
  quiet: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} satisfies NonNullable<ParseArgsConfig['options']>;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

function int(name: string, text: string | undefined, min = 0): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got "${text}"`);
  return n;
}

const must = (name: string, text: string, min = 0): number => int(name, text, min) ?? NaN;

export interface Run {
  readonly scenario: Scenario;
  readonly protocol: 'sotw' | 'delta';
  readonly size: MeshSize;
  readonly loadGens: number;
  readonly syncTimeoutMs: number;
  readonly deadlineMs: number;
}

export interface SuiteOptions {
  readonly help: boolean;
  readonly runs: readonly Run[];
  readonly steps: ReadonlySet<StepName>;
  readonly restart: RestartOptions;
  readonly env: Readonly<Record<string, string>>;
  readonly convergeTimeoutMs: number;
  readonly quietMs: number;
  readonly minSettleMs: number;
  readonly deadlineMs: number;
  readonly maxRssMiB: number;
  readonly out: string;
  readonly quiet: boolean;
  readonly preset: string;
  /** --dist: build first and run the built CLI. */
  readonly dist: boolean;
}

function sizeFor(v: Values, s: Scenario): MeshSize {
  const base = v.quick ? s.quick : s.defaults;
  const scale = v.scale ? { services: 1000, sidecars: 2000, proxyless: 0, namespaces: 10 } : {};
  const given = {
    services: int('services', v.services, 1),
    instances: int('instances', v.instances, 1),
    namespaces: int('namespaces', v.namespaces, 1),
    sidecars: int('sidecars', v.sidecars),
    proxyless: int('proxyless', v.proxyless),
    routers: int('routers', v.routers),
  };
  const pick = (k: keyof typeof given): number => given[k] ?? (scale as Partial<Record<string, number>>)[k] ?? base[k];
  return {
    services: pick('services'),
    instances: pick('instances'),
    namespaces: pick('namespaces'),
    sidecars: pick('sidecars'),
    proxyless: pick('proxyless'),
    routers: pick('routers'),
    restart: must('restart', v.restart),
    sidecarScope: v['sidecar-scope'],
  };
}

export function parseSuiteOptions(args: readonly string[] = process.argv.slice(2)): SuiteOptions {
  const { values: v } = parseArgs({ args: [...args], options: OPTIONS });
  const names =
    v.scenarios
      ?.split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '') ?? (v.scale ? ['http'] : SCENARIOS.map((s) => s.name));
  const scenarios = names.map(scenarioByName);
  const protocol = v.delta ? 'delta' : v.protocol;
  if (!['sotw', 'delta', 'both'].includes(protocol)) throw new Error(`--protocol must be sotw, delta or both, got "${protocol}"`);
  const protocols = protocol === 'both' ? (['sotw', 'delta'] as const) : ([protocol as 'sotw' | 'delta'] as const);
  const stepNames = v.steps?.split(',').map((x) => x.trim()) ?? [...STEP_NAMES];
  for (const n of stepNames)
    if (!(STEP_NAMES as readonly string[]).includes(n)) throw new Error(`unknown step "${n}" (one of: ${STEP_NAMES.join(', ')})`);
  const env: Record<string, string> = { PILOT_MAX_REQUESTS_PER_SECOND: '100000' };
  for (const kv of v.env) {
    const i = kv.indexOf('=');
    if (i <= 0) throw new Error(`--env wants KEY=VALUE, got ${kv}`);
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  const runs: Run[] = [];
  // Beyond the presets' sizes the whole-suite cap is 30 minutes, else 9.5 (the suite's budget is 10).
  const sized = v.scale || ['services', 'instances', 'sidecars', 'proxyless', 'routers'].some((k) => v[k as keyof typeof v] !== undefined);
  for (const scenario of scenarios) {
    const size = sizeFor(v, scenario);
    const proxies = size.sidecars + size.proxyless + size.routers;
    for (const p of protocols) {
      runs.push({
        scenario,
        protocol: p,
        size,
        loadGens: int('load-gens', v['load-gens'], 1) ?? (proxies >= 5000 ? 2 : 1),
        syncTimeoutMs: int('sync-timeout-ms', v['sync-timeout-ms'], 1) ?? 60_000 + 20 * proxies,
        deadlineMs: int('run-deadline-ms', v['run-deadline-ms'], 1) ?? 120_000 + 30 * proxies,
      });
    }
  }
  return {
    help: v.help,
    runs,
    steps: new Set(stepNames as StepName[]),
    restart: { batch: must('restart-batch', v['restart-batch'], 1), intervalMs: must('restart-interval-ms', v['restart-interval-ms']) },
    env,
    convergeTimeoutMs: must('converge-timeout-ms', v['converge-timeout-ms'], 1),
    quietMs: must('quiet-ms', v['quiet-ms']),
    minSettleMs: must('min-settle-ms', v['min-settle-ms']),
    deadlineMs: int('deadline-ms', v['deadline-ms'], 1) ?? (sized ? 1_800_000 : 570_000),
    maxRssMiB: must('max-rss-mib', v['max-rss-mib'], 1),
    out: v.out,
    quiet: v.quiet,
    preset: v.scale ? 'scale' : v.quick ? 'quick' : 'default',
    dist: v.dist,
  };
}
