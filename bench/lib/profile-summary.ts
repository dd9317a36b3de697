/**
 * Summarises a V8 .cpuprofile (node --cpu-prof) by busy period: samples are grouped into bursts
 * separated by ≥ `--gap-ms` of idle, and each burst lists its top functions by self time and by
 * total (inclusive) time. The churn steps of a bench run show up as the last bursts.
 *
 *   npx tsx bench/lib/profile-summary.ts FILE.cpuprofile [--gap-ms 300] [--top 25] [--last N] [--under FUNCTION] [--from S] [--to S]
 *
 * `--from 20 --to 45` keeps only the samples between those seconds after the profile's start.
 * `--under onDebounced` keeps only the samples with that function on the stack (one phase of a step).
 * `--after onDebounced --span 450` keeps the 450 ms from the last time that function began to run
 * (a push phase found by its first function, when its offset from the profile's start is unknown).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

const file = process.argv[2];
if (!file) throw new Error('usage: profile-summary FILE.cpuprofile [--gap-ms N] [--top N] [--last N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const gapUs = arg('--gap-ms', 300) * 1000;
const top = arg('--top', 25);
const last = arg('--last', 4);
const underAt = process.argv.indexOf('--under');
const under = underAt === -1 ? undefined : process.argv[underAt + 1];
const afterAt = process.argv.indexOf('--after');
const after = afterAt === -1 ? undefined : process.argv[afterAt + 1];

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);
const label = (n: ProfileNode): string => {
  const url = n.callFrame.url.replace(/^.*\/(src|node_modules)\//, '$1/');
  return `${n.callFrame.functionName || '(anon)'} ${url}:${n.callFrame.lineNumber + 1}`;
};

function onStack(id: number, fn: string): boolean {
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)?.callFrame.functionName === fn) return true;
  return false;
}

/** When `fn` last began to run: the first of its samples after the last gap of a second without it. */
function lastStartOf(fn: string): number {
  let at = profile.startTime;
  let start: number | undefined;
  let prev = -Infinity;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (!onStack(profile.samples[i] ?? 0, fn)) continue;
    if (at - prev > 1e6) start = at;
    prev = at;
  }
  if (start === undefined) throw new Error(`--after ${fn}: the function is not in the profile`);
  return start;
}

const fromUs = after === undefined ? profile.startTime + arg('--from', 0) * 1e6 : lastStartOf(after);
const toUs = after === undefined ? profile.startTime + arg('--to', Infinity) * 1e6 : fromUs + arg('--span', Infinity) * 1000;

interface Burst {
  start: number;
  end: number;
  samples: Array<{ id: number; us: number }>;
}
const bursts: Burst[] = [];
let t = profile.startTime;
let lastBusy = -Infinity;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  t += dt;
  const id = profile.samples[i] ?? 0;
  const node = byId.get(id);
  if (!node || node.callFrame.functionName === '(idle)') continue;
  if (under !== undefined && !onStack(id, under)) continue;
  if (t < fromUs || t > toUs) continue;
  const cur = bursts.at(-1);
  if (!cur || t - lastBusy > gapUs) bursts.push({ start: t, end: t, samples: [{ id, us: dt }] });
  else {
    cur.end = t;
    cur.samples.push({ id, us: dt });
  }
  lastBusy = t;
}

for (const b of bursts.slice(-last)) {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let busy = 0;
  for (const s of b.samples) {
    busy += s.us;
    const node = byId.get(s.id);
    if (!node) continue;
    self.set(label(node), (self.get(label(node)) ?? 0) + s.us);
    const seen = new Set<string>();
    for (let id: number | undefined = s.id; id !== undefined; id = parent.get(id)) {
      const n = byId.get(id);
      if (!n || IDLE.has(n.callFrame.functionName)) continue;
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + s.us);
    }
  }
  const ms = (us: number): string => (us / 1000).toFixed(1).padStart(8);
  console.log(
    `\n=== burst at +${((b.start - profile.startTime) / 1e6).toFixed(2)} s, ${((b.end - b.start) / 1000).toFixed(0)} ms wall, ${(busy / 1000).toFixed(1)} ms sampled ===`,
  );
  console.log('-- self');
  for (const [k, v] of [...self].sort((a, c) => c[1] - a[1]).slice(0, top)) console.log(`${ms(v)}  ${k}`);
  console.log('-- total');
  for (const [k, v] of [...total].sort((a, c) => c[1] - a[1]).slice(0, top)) console.log(`${ms(v)}  ${k}`);
}
