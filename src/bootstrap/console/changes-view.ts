/**
 * The console's change list: the propagation tracker's summaries (what /debug/push_status reports,
 * without its per-proxy lists), each config named with where it came from, the bytes and types of
 * its push when the console was open to tally them, and a histogram of convergence times.
 */
import type { ConfigSnapshot, KindName } from '../../config/index.js';
import { KIND_NAMES } from '../../config/index.js';
import type { ChangeSummary, Completion, VersionVolume } from '../../xds/index.js';

export interface ChangedConfig {
  /** `Kind/namespace/name`. */
  readonly key: string;
  /** `file:line` for a file, `Kubernetes API`, or `deleted` when the object is gone. */
  readonly source: string;
}

export interface ChangeView extends Omit<ChangeSummary, 'configs'> {
  readonly configs: readonly ChangedConfig[];
  /** Total configs of the change (configs lists the first few). */
  readonly configCount: number;
  /** What the push wrote, when a console was open to tally it. */
  readonly push?: VersionVolume;
}

export interface HistogramBucket {
  /** Upper bound in ms (Infinity for the last bucket, sent as null). */
  readonly le: number | null;
  readonly count: number;
}

export interface ConvergenceHistogram {
  readonly windowMs: number;
  readonly buckets: readonly HistogramBucket[];
  readonly count: number;
  readonly nacked: number;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  readonly maxMs?: number;
}

/** Bucket bounds (ms): a loopback mesh converges in milliseconds, a loaded one in seconds. */
const BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000];
const CONFIGS_SHOWN = 5;
const KINDS: ReadonlySet<string> = new Set(KIND_NAMES);

/** Where a changed config came from, read from the current snapshot's origin. */
export function configSource(snapshot: ConfigSnapshot, key: string): string {
  const [kind = '', namespace = '', ...rest] = key.split('/');
  if (!KINDS.has(kind)) return kind === '' ? 'unknown' : 'registry';
  const c = snapshot.get(kind as KindName, namespace, rest.join('/'));
  if (!c) return 'deleted';
  const o = c.meta.origin;
  // The Kubernetes source records k8s://ns/Kind/name (kube-source.ts kubeOrigin).
  if (!o || o.file.startsWith('k8s://')) return 'Kubernetes API';
  return o.line !== undefined ? `${o.file}:${o.line}` : o.file;
}

export function changeViews(
  summaries: readonly ChangeSummary[],
  snapshot: ConfigSnapshot,
  volume: (version: string) => VersionVolume | undefined,
): ChangeView[] {
  return summaries.map((s) => {
    const push = volume(s.version);
    return {
      ...s,
      configs: s.configs.slice(0, CONFIGS_SHOWN).map((key) => ({ key, source: configSource(snapshot, key) })),
      configCount: s.configs.length,
      ...(push ? { push } : {}),
    };
  });
}

function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export function convergenceHistogram(done: readonly Completion[], windowMs: number): ConvergenceHistogram {
  const counts = new Array<number>(BOUNDS_MS.length + 1).fill(0);
  for (const c of done) {
    const i = BOUNDS_MS.findIndex((b) => c.ms <= b);
    counts[i < 0 ? BOUNDS_MS.length : i]!++;
  }
  const sorted = done.map((c) => c.ms).sort((a, b) => a - b);
  const ms = <K extends string>(k: K, n: number | undefined): { [P in K]?: number } =>
    (n === undefined ? {} : { [k]: Math.round(n) }) as { [P in K]?: number };
  return {
    windowMs,
    buckets: counts.map((count, i) => ({ le: BOUNDS_MS[i] ?? null, count })),
    count: done.length,
    nacked: done.filter((c) => c.nacked).length,
    ...ms('p50Ms', quantile(sorted, 0.5)),
    ...ms('p99Ms', quantile(sorted, 0.99)),
    ...ms('maxMs', sorted[sorted.length - 1]),
  };
}
