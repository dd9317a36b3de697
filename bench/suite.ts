/**
 * The benchmark suite (performance at mesh scale): for each scenario — modelled on
 * istiod's own benchmark inputs (http, tcp, tls, virtualservice-heavy, authorizationpolicy,
 * serviceentry-workloadentry, gateways) — meshpilot as a child process, simulated Envoy sidecars,
 * gateway routers and proxyless gRPC clients in separate load-generator processes, the time to
 * first full sync, then churn: a VirtualService edit, one endpoint added and removed, a rolling
 * restart, a namespace-wide PeerAuthentication change. Prints tables and writes JSON.
 *
 *   npm run bench:suite -- [--quick] [--scenarios http,tcp] [--protocol both] [--scale] …   (--help)
 */
import { buildCli } from './lib/build.js';
import { nowMs } from '../test/support/raw-ads-client.js';
import { parseSuiteOptions, USAGE } from './suite/options.js';
import { printReport, writeJson } from './suite/report.js';
import { runScenario, type ScenarioResult } from './suite/run-scenario.js';

async function main(): Promise<void> {
  const o = parseSuiteOptions();
  if (o.help) {
    console.log(USAGE);
    return;
  }
  const log = (msg: string): void => {
    if (!o.quiet) process.stderr.write(`[suite] ${msg}\n`);
  };
  const cliJs = o.dist ? buildCli(log) : undefined;
  const t0 = nowMs();
  const results: ScenarioResult[] = [];
  const meta = (): Record<string, unknown> => ({
    preset: o.preset,
    dist: o.dist,
    env: o.env,
    steps: [...o.steps],
    restart: o.restart,
    wallMs: Math.round(nowMs() - t0),
    timeouts: { convergeMs: o.convergeTimeoutMs, quietMs: o.quietMs, minSettleMs: o.minSettleMs, suiteDeadlineMs: o.deadlineMs },
    runs: o.runs.map((r) => ({
      scenario: r.scenario.name,
      protocol: r.protocol,
      loadGens: r.loadGens,
      syncTimeoutMs: r.syncTimeoutMs,
      deadlineMs: r.deadlineMs,
    })),
  });
  for (const run of o.runs) {
    const left = o.deadlineMs - (nowMs() - t0);
    if (left < 10_000) {
      log(`suite deadline of ${o.deadlineMs} ms reached: skipping ${run.scenario.name}/${run.protocol} and the rest`);
      break;
    }
    results.push(
      await runScenario(run.scenario, run.size, {
        protocol: run.protocol,
        env: o.env,
        loadGens: run.loadGens,
        syncTimeoutMs: run.syncTimeoutMs,
        convergeTimeoutMs: o.convergeTimeoutMs,
        quietMs: o.quietMs,
        minSettleMs: o.minSettleMs,
        deadlineMs: Math.min(run.deadlineMs, left),
        maxRssMiB: o.maxRssMiB,
        steps: o.steps,
        restart: o.restart,
        log,
        ...(cliJs !== undefined ? { cliJs } : {}),
      }),
    );
    await writeJson(o.out, meta(), results);
  }
  printReport(results);
  console.log(`\nsuite took ${((nowMs() - t0) / 1000).toFixed(0)} s; JSON: ${o.out}`);
  const failed = results.some((r) => r.error !== undefined || !r.sync?.complete || r.steps.some((s) => !s.complete));
  if (failed || results.length < o.runs.length) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(`[suite] failed: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});
