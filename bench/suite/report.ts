/** The suite's printed tables (first sync per run; one row per run × churn step) and its JSON file. */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { fmtCounts } from '../lib/stats.js';
import type { ScenarioResult, StepResult } from './run-scenario.js';

function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i < 3 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), w.map((n) => '─'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

const num = (x: number | undefined, digits = 0): string => (x !== undefined && Number.isFinite(x) ? x.toFixed(digits) : '–');
const mib = (bytes: number | undefined): string => num(bytes === undefined ? undefined : bytes / 1048576, 1);
const kibToMib = (k: number | undefined): string => num(k === undefined ? undefined : k / 1024);

function syncRow(r: ScenarioResult): string[] {
  const p = r.proxies;
  const m = r.meshpilot;
  const s = r.sync;
  return [
    r.scenario,
    r.protocol,
    `${r.size.services}${r.size.sidecarScope ? '+scope' : ''}`,
    `${p.sidecar}/${p.proxyless}/${p.router}`,
    s ? `${s.synced}/${s.total}` : '–',
    num(m?.readyMs),
    num(s?.allMs),
    s ? `${num(s.perProxyMs.p50)}/${num(s.perProxyMs.p99)}` : '–',
    mib(s?.bytes),
    num(m ? m.syncCpuMs / 1000 : undefined, 1),
    num(s ? s.loadGenCpuMs / 1000 : undefined, 1),
    `${s?.reconnects ?? '–'}`,
    kibToMib(m?.beforeClientsKiB?.rss),
    kibToMib(m?.syncedKiB?.rss),
    kibToMib(m?.syncedKiB?.hwm),
    num(m?.rssPerProxyKiB, 1),
    r.error !== undefined ? `ERROR ${r.error.slice(0, 60)}` : s && !s.complete ? 'INCOMPLETE' : '',
  ];
}

function stepRow(r: ScenarioResult, st: StepResult): string[] {
  const c = st.convergenceMs;
  const others = `${st.othersReached}/${st.others}`;
  return [
    r.scenario,
    r.protocol,
    st.label,
    `${st.converged}/${st.expected}`,
    num(c.p50),
    num(c.p99),
    num(c.max),
    `${st.expectedReached}`,
    others,
    `${st.noopResponses}`,
    num(st.meshpilotCpuMs),
    num(st.planMs, 1),
    num(st.bytesToClients / 1024),
    num(st.meshpilotWroteBytes / 1024),
    fmtCounts(st.pushes),
  ];
}

export function printReport(results: readonly ScenarioResult[]): void {
  console.log(
    '\nFirst sync (ms; CPU s: meshpilot, LG: load generators; RSS of meshpilot in MiB, before the proxies / after sync / peak; RSS/proxy in KiB)',
  );
  console.log(
    table(
      [
        'scenario',
        'proto',
        'services',
        'sc/pl/rt',
        'synced',
        'ready',
        'sync all',
        'p50/p99',
        'MiB sent',
        'CPU s',
        'LG CPU s',
        'reconn',
        'RSS pre',
        'RSS',
        'HWM',
        'RSS/proxy',
        '',
      ],
      results.map(syncRow),
    ),
  );
  console.log(
    '\nChurn (ms from the last write; "reached": proxies that received anything, expected / others; "no-op": responses that changed nothing the proxy held;',
  );
  console.log(
    " CPU ms: all of meshpilot's CPU during the step, sends and ACKs included; plan ms: wall time of deciding the push (synchronous) — change set, invalidation, PushContext, choosing proxies)",
  );
  console.log(
    table(
      [
        'scenario',
        'proto',
        'step',
        'conv/exp',
        'p50',
        'p99',
        'max',
        'exp reached',
        'others reached',
        'no-op',
        'CPU ms',
        'plan ms',
        'KiB sent',
        'mp wrote KiB',
        'pushes',
      ],
      results.flatMap((r) => r.steps.map((st) => stepRow(r, st))),
    ),
  );
  const notes = results.flatMap((r) => [
    ...((r.otherCpuMs ?? 0) > 0.05 * r.wallMs
      ? [
          `${r.scenario}/${r.protocol}: other processes used ${num((r.otherCpuMs ?? 0) / 1000, 1)} CPU s during the ${num(r.wallMs / 1000)} s run: wall-clock figures are inflated`,
        ]
      : []),
    ...r.steps.flatMap((st) => [
      ...(st.fromFirstWriteMs
        ? [
            `${r.scenario}/${r.protocol} ${st.label}: rollout took ${num(st.rolloutMs)} ms; from the first write p50/p99/max ${num(st.fromFirstWriteMs.p50)}/${num(st.fromFirstWriteMs.p99)}/${num(st.fromFirstWriteMs.max)} ms`,
          ]
        : []),
      ...(st.othersReached > 0
        ? [
            `${r.scenario}/${r.protocol} ${st.label}: ${st.othersReached} proxies not expected to change received ${fmtCounts(st.othersResponses)} (${fmtCounts(st.othersReachedByKind)})`,
          ]
        : []),
      ...(!st.idleBefore.idle
        ? [
            `${r.scenario}/${r.protocol} ${st.label}: meshpilot/load generator not idle before the step (waited ${st.idleBefore.waitedMs} ms)`,
          ]
        : []),
    ]),
  ]);
  if (notes.length > 0) console.log(`\n${notes.join('\n')}`);
}

export async function writeJson(file: string, meta: Record<string, unknown>, results: readonly ScenarioResult[]): Promise<void> {
  const machine = {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify({ date: new Date().toISOString(), machine, ...meta, results }, null, 2)}\n`);
}
