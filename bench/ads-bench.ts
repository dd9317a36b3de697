/**
 * ADS load benchmark, proxyless only: S services, N simulated proxyless clients (5 listeners each,
 * every other one watching the edited service) in a separate load-generator process, against
 * meshpilot started as a child process on loopback. A shorthand for one run of the suite's `http`
 * scenario (bench/suite.ts) with only the VirtualService edit and the endpoint steps.
 *
 *   npx tsx bench/ads-bench.ts --services 100 --clients 500 [--endpoints 3] [--delta]
 *
 * Prints the suite's tables and writes bench/results/ads-bench.json.
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../test/support/paths.js';
import { http } from './suite/scenarios/http.js';
import { printReport, writeJson } from './suite/report.js';
import { runScenario } from './suite/run-scenario.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '100' },
    clients: { type: 'string', default: '500' },
    endpoints: { type: 'string', default: '3' },
    syncTimeoutMs: { type: 'string', default: '180000' },
    convergeTimeoutMs: { type: 'string', default: '30000' },
    deadlineMs: { type: 'string', default: '600000' },
    env: { type: 'string', multiple: true, default: [] },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/ads-bench.json') },
    quiet: { type: 'boolean', default: false },
    delta: { type: 'boolean', default: false },
  },
});

function positive(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
}

// The bench measures generation and push, not admission: like istiod's own load tests, lift the
// new-stream rate limit (default 15 + 5·cores per second) unless --env sets it.
const env: Record<string, string> = { PILOT_MAX_REQUESTS_PER_SECOND: '100000' };
for (const kv of opt.env) {
  const i = kv.indexOf('=');
  if (i <= 0) throw new Error(`--env wants KEY=VALUE, got ${kv}`);
  env[kv.slice(0, i)] = kv.slice(i + 1);
}

const size = {
  services: positive('services', opt.services),
  instances: positive('endpoints', opt.endpoints),
  namespaces: 1,
  sidecars: 0,
  proxyless: positive('clients', opt.clients),
  routers: 0,
  restart: 0,
  sidecarScope: false,
};
const result = await runScenario(http, size, {
  protocol: opt.delta ? 'delta' : 'sotw',
  env,
  loadGens: size.proxyless >= 5000 ? 2 : 1,
  syncTimeoutMs: positive('syncTimeoutMs', opt.syncTimeoutMs),
  convergeTimeoutMs: positive('convergeTimeoutMs', opt.convergeTimeoutMs),
  quietMs: 500,
  minSettleMs: 1000,
  deadlineMs: positive('deadlineMs', opt.deadlineMs),
  maxRssMiB: Math.round(totalmem() / 2 / 1048576),
  steps: new Set(['route', 'endpoint']),
  restart: { batch: 1, intervalMs: 0 },
  log: (m) => opt.quiet || process.stderr.write(`[ads-bench] ${m}\n`),
});
await writeJson(opt.out, { bench: 'ads-bench', env }, [result]);
printReport([result]);
console.log(`\nJSON: ${opt.out}`);
if (result.error !== undefined || !result.sync?.complete || result.steps.some((s) => !s.complete)) process.exitCode = 1;
