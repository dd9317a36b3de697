/**
 * Connection churn against a meshpilot process: `cycles` connect → CDS (wildcard) → first response
 * → disconnect cycles, `concurrency` at once, each a new sidecar (its own node id and TCP
 * connection, raw SotW client). At each checkpoint the driver idles, then samples the server's RSS
 * (/proc) and heap after a full GC (/debug/memz?gc=true) and the proxies it still counts
 * (pilot_xds); with --snapshots it also has the server write a V8 heap snapshot (SIGUSR2,
 * node --heapsnapshot-signal) and compares consecutive snapshots by constructor
 * (bench/lib/heap-diff.mjs: count and self size, largest growth first).
 *
 *   npx tsx bench/churn-soak.ts [--cycles 5000] [--checkpoints 2] [--concurrency 50] [--idle 10] [--snapshots] [--dist]
 *
 * RSS figures on a shared machine are indicative; compare runs made back to back.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AdsStream, type AdsNode } from '../test/support/raw-ads-client.js';
import { TYPE } from '../test/support/xds-resources.js';
import { meshDir, startOn, xdsCounts } from './faults/mesh-process.js';
import { buildCli } from './lib/build.js';
import { memKiB } from './lib/proc.js';

const { values: args } = parseArgs({
  options: {
    cycles: { type: 'string', default: '5000' },
    checkpoints: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '50' },
    idle: { type: 'string', default: '10' },
    snapshots: { type: 'boolean', default: false },
    dist: { type: 'boolean', default: false },
  },
});
const cycles = Number(args.cycles);
const checkpoints = Number(args.checkpoints);
const concurrency = Number(args.concurrency);
const idleMs = Number(args.idle) * 1000;

const HEAP_DIFF = fileURLToPath(new URL('./lib/heap-diff.mjs', import.meta.url));
const MiB = 1024 * 1024;
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A sidecar of the bench mesh (namespace ns-0), a new identity every cycle. */
function sidecarNode(i: number): AdsNode {
  const ip = `10.${250 + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`;
  return {
    id: `sidecar~${ip}~churn-${i}.ns-0~ns-0.svc.cluster.local`,
    metadata: { NAMESPACE: 'ns-0', LABELS: { app: 'churn' }, INSTANCE_IPS: ip, ISTIO_VERSION: '1.24.0' },
  };
}

const snapDir = mkdtempSync(join(tmpdir(), 'meshpilot-churn-snap-'));
const nodeArgs = ['--expose-gc', ...(args.snapshots ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapDir}`] : [])];
process.env.MESHPILOT_NODE_ARGS = `${process.env.MESHPILOT_NODE_ARGS ?? ''} ${nodeArgs.join(' ')}`.trim();
const cliJs = args.dist ? buildCli((m) => console.error(m)) : undefined;
const dir = await meshDir();
const mp = await startOn(dir, cliJs !== undefined ? { cliJs } : {});

async function cycle(i: number): Promise<void> {
  const s = AdsStream.open(mp.grpcAddr, { node: sidecarNode(i), separateConnection: true });
  try {
    s.subscribe(TYPE.CDS, []);
    await s.next(TYPE.CDS, 30_000);
  } finally {
    s.close();
  }
}

/** Has the server write a heap snapshot and waits until the file is complete. */
async function snapshot(): Promise<string> {
  const before = new Set(readdirSync(snapDir));
  process.kill(mp.pid, 'SIGUSR2');
  for (let last = -1; ;) {
    await pause(1000);
    const file = readdirSync(snapDir).find((f) => !before.has(f) && f.endsWith('.heapsnapshot'));
    if (!file) continue;
    const size = statSync(join(snapDir, file)).size;
    // V8 writes the snapshot while the process is paused; the size stops changing when it is done.
    if (size > 0 && size === last && (await fetch(`http://${mp.httpAddr}/ready`).catch(() => undefined))) return join(snapDir, file);
    last = size;
  }
}

interface Checkpoint {
  readonly cycles: number;
  readonly rssMiB: string;
  readonly heapAfterGcMiB: string;
  /** V8 heap committed (all spaces) and the young generation's share: RSS that GC does not give back at once. */
  readonly heapCommittedMiB: string;
  readonly newSpaceMiB: string;
  readonly externalMiB: string;
  readonly connected: number;
  /** Entries of the xDS cache (/debug/cachez): bounded by PILOT_XDS_CACHE_SIZE, not a leak. */
  readonly cacheEntries: number;
  readonly snapshot?: string;
}

async function measure(done: number): Promise<Checkpoint> {
  await pause(idleMs);
  const memz = (await (await fetch(`http://${mp.httpAddr}/debug/memz?gc=true`)).json()) as {
    heapUsed: number;
    heapTotal: number;
    external: number;
    heapSpaces: Record<string, { size: number }>;
  };
  const rss = ((await memKiB(mp.pid))?.rss ?? NaN) * 1024;
  const { connected } = await xdsCounts(mp);
  const cachez = (await (await fetch(`http://${mp.httpAddr}/debug/cachez`)).json()) as Record<string, unknown>;
  const c: Checkpoint = {
    cycles: done,
    rssMiB: mib(rss),
    heapAfterGcMiB: mib(memz.heapUsed),
    heapCommittedMiB: mib(memz.heapTotal),
    newSpaceMiB: mib(memz.heapSpaces.new_space?.size ?? NaN),
    externalMiB: mib(memz.external),
    connected,
    cacheEntries: Number(cachez.size ?? cachez.entries ?? NaN),
    ...(args.snapshots ? { snapshot: await snapshot() } : {}),
  };
  console.error(
    `after ${done} cycles and ${idleMs / 1000} s idle: RSS ${c.rssMiB} MiB, heap after GC ${c.heapAfterGcMiB} MiB (committed ${c.heapCommittedMiB}, new space ${c.newSpaceMiB}, external ${c.externalMiB}), connected ${connected}, xDS cache entries ${c.cacheEntries}`,
  );
  return c;
}

let exitCode = 0;
try {
  // Warm-up: code compiled, caches filled.
  for (let i = 0; i < 50; i++) await cycle(1_000_000 + i);
  const points: Checkpoint[] = [await measure(0)];
  let next = 0;
  let failures = 0;
  let firstError = '';
  const t0 = performance.now();
  for (let k = 1; k <= checkpoints; k++) {
    const upTo = Math.round((cycles * k) / checkpoints);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < upTo) {
          const i = next++;
          await cycle(i).catch((err: unknown) => {
            failures++;
            firstError ||= err instanceof Error ? err.message : String(err);
          });
        }
      }),
    );
    points.push(await measure(upTo));
  }
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `\nchurn: ${cycles} connect → CDS → disconnect cycles, ${concurrency} at once, each a new sidecar on its own TCP connection; ` +
      `${failures} failed${firstError ? ` (${firstError})` : ''}; ${seconds.toFixed(0)} s of cycles (idle pauses excluded)\n`,
  );
  console.log(
    '| cycles | RSS MiB | heap after GC MiB | heap committed MiB | new space MiB | external MiB | proxies connected | xDS cache entries |\n|---|---|---|---|---|---|---|---|',
  );
  for (const p of points)
    console.log(
      `| ${p.cycles} | ${p.rssMiB} | ${p.heapAfterGcMiB} | ${p.heapCommittedMiB} | ${p.newSpaceMiB} | ${p.externalMiB} | ${p.connected} | ${p.cacheEntries} |`,
    );
  for (let k = 1; k < points.length; k++) {
    const a = points[k - 1]?.snapshot;
    const b = points[k]?.snapshot;
    if (a === undefined || b === undefined) continue;
    console.log(
      `\nheap snapshot ${points[k - 1]?.cycles} → ${points[k]?.cycles} cycles, by constructor (self size, largest growth first):`,
    );
    console.log(execFileSync(process.execPath, [HEAP_DIFF, a, b, '15'], { encoding: 'utf8', maxBuffer: 16 << 20 }));
  }
  if (failures > 0 || (points.at(-1)?.connected ?? 0) > 0) exitCode = 1;
} finally {
  await mp.stop();
  await dir.remove();
  rmSync(snapDir, { recursive: true, force: true });
}
process.exit(exitCode);
