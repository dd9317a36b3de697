/** Scrapes meshpilot's /metrics (monitoring port) for the series the benches report. */

const OF_INTEREST = new Set([
  'pilot_xds',
  'pilot_xds_pushes',
  'pilot_total_xds_rejects',
  'pilot_xds_push_time_count',
  'pilot_proxy_convergence_time_count',
  'pilot_proxy_convergence_time_sum',
  'pilot_inbound_updates',
  'pilot_services',
  'pilot_push_triggers',
  'pilot_pushcontext_init_seconds_count',
  'pilot_pushcontext_init_seconds_sum',
  'meshpilot_xds_oversized_responses_total',
  'pilot_total_xds_internal_errors',
  'meshpilot_push_plan_seconds_sum',
  'meshpilot_push_plan_seconds_count',
]);

/** `series → value` for the metrics of interest, or an error string. */
export async function scrapeMetrics(addr: string): Promise<Record<string, number> | string> {
  try {
    const res = await fetch(`http://${addr}/metrics`, { signal: AbortSignal.timeout(5000) });
    if (res.status !== 200) return `GET /metrics: ${res.status}`;
    const out: Record<string, number> = {};
    for (const line of (await res.text()).split('\n')) {
      if (line.startsWith('#') || line.trim() === '') continue;
      const name = line.slice(0, line.search(/[{ ]/));
      if (!OF_INTEREST.has(name)) continue;
      out[line.slice(0, line.lastIndexOf(' '))] = Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return out;
  } catch (err) {
    return `GET /metrics failed: ${(err as Error).message}`;
  }
}

/** pilot_xds_pushes by type: `{lds: n, …}` from a scrape. */
export function pushesByType(m: Record<string, number> | string): Record<string, number> {
  const out: Record<string, number> = {};
  if (typeof m === 'string') return out;
  for (const [series, v] of Object.entries(m)) {
    const t = /^pilot_xds_pushes\{type="([^"]+)"\}$/.exec(series)?.[1];
    if (t !== undefined) out[t] = v;
  }
  return out;
}

/** Milliseconds between two scrapes spent planning pushes (meshpilot_push_plan_seconds), or undefined. */
export function planMsBetween(before: Record<string, number> | string, after: Record<string, number> | string): number | undefined {
  if (typeof before === 'string' || typeof after === 'string') return undefined;
  const a = after.meshpilot_push_plan_seconds_sum;
  const b = before.meshpilot_push_plan_seconds_sum;
  return a === undefined || b === undefined ? undefined : (a - b) * 1000;
}

/** meshpilot's /debug/memz in MiB (heap used and total, external, array buffers), or why it could not be read. */
export async function heapMiB(addr: string): Promise<Record<string, number> | string> {
  try {
    const res = await fetch(`http://${addr}/debug/memz`, { signal: AbortSignal.timeout(5000) });
    if (res.status !== 200) return `GET /debug/memz: ${res.status}`;
    const m = (await res.json()) as Record<string, unknown>;
    const mib = (k: string): number => (typeof m[k] === 'number' ? Math.round((m[k] as number) / 104857.6) / 10 : NaN);
    return { heapUsed: mib('heapUsed'), heapTotal: mib('heapTotal'), external: mib('external'), arrayBuffers: mib('arrayBuffers') };
  } catch (err) {
    return `GET /debug/memz: ${(err as Error).message}`;
  }
}
