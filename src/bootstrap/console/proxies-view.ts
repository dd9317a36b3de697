/**
 * The console's proxy table, built on the server from the connections' recorded sync state (the
 * same syncStatus as /debug/syncz and `meshctl proxy-status`), with the counts the page shows
 * above it. The browser gets the whole table once and then only the rows that changed, so a push to
 * 2,000 proxies costs one message per tick, not one per proxy event.
 */
import { syncStatus, type Connection, type SyncStatus } from '../../xds/index.js';
import { shortType } from '../../xds/type-urls.js';

/** What the page calls a proxy: Istio's proxy types, with proxyless gRPC clients told apart. */
export type ProxyKind = 'sidecar' | 'gateway' | 'waypoint' | 'ztunnel' | 'proxyless';

export interface ProxyRow {
  /** The connection id (a proxy reconnecting is a new row). */
  readonly id: string;
  readonly proxy: string;
  readonly namespace: string;
  readonly kind: ProxyKind;
  readonly istioVersion: string;
  /** Epoch ms. */
  readonly connectedAt: number;
  /** The worst state of its types: NACKED over STALE over SYNCED over NOT SENT. */
  readonly state: SyncStatus;
  /** Sync state per xDS type (CDS, LDS …), as /debug/syncz. */
  readonly types: Readonly<Record<string, SyncStatus>>;
  /** Envoy's error for the last NACKed response, `TYPE: message`. */
  readonly nack?: string;
}

export interface ProxyCounts {
  readonly total: number;
  readonly byState: Readonly<Record<string, number>>;
  readonly byKind: Readonly<Record<string, number>>;
  readonly byNamespace: Readonly<Record<string, number>>;
}

export interface RowDelta {
  readonly upsert: readonly ProxyRow[];
  readonly remove: readonly string[];
}

const STATE_RANK: Readonly<Record<SyncStatus, number>> = { NACKED: 3, STALE: 2, SYNCED: 1, 'NOT SENT': 0 };
/** Longest NACK message carried per row (Envoy's errors can run to kilobytes). */
const MAX_NACK_CHARS = 400;

export function proxyKind(c: Connection): ProxyKind {
  if (c.proxy.metadata.generator === 'grpc') return 'proxyless';
  return c.proxy.type === 'router' ? 'gateway' : c.proxy.type;
}

export function proxyRow(c: Connection): ProxyRow {
  const types: Record<string, SyncStatus> = {};
  let state: SyncStatus = 'NOT SENT';
  let nack: string | undefined;
  for (const w of c.watchedTypes()) {
    const s = syncStatus(w);
    const t = shortType(w.typeUrl);
    types[t] = s;
    if (STATE_RANK[s] > STATE_RANK[state]) state = s;
    if (s === 'NACKED' && nack === undefined && w.lastError) nack = `${t}: ${w.lastError.message.slice(0, MAX_NACK_CHARS)}`;
  }
  return {
    id: c.id,
    proxy: c.proxy.id,
    namespace: c.proxy.namespace,
    kind: proxyKind(c),
    istioVersion: c.proxy.metadata.istioVersion ?? '',
    connectedAt: c.connectedAt,
    state,
    types,
    ...(nack !== undefined ? { nack } : {}),
  };
}

function bump(m: Record<string, number>, k: string): void {
  m[k] = (m[k] ?? 0) + 1;
}

export function countRows(rows: Iterable<ProxyRow>): ProxyCounts {
  const byState: Record<string, number> = { SYNCED: 0, STALE: 0, 'NOT SENT': 0, NACKED: 0 };
  const byKind: Record<string, number> = {};
  const byNamespace: Record<string, number> = {};
  let total = 0;
  for (const r of rows) {
    total++;
    bump(byState, r.state);
    bump(byKind, r.kind);
    bump(byNamespace, r.namespace);
  }
  return { total, byState, byKind, byNamespace };
}

/**
 * The table as last sent: `update` rebuilds the rows from the connections and returns what changed
 * since the previous call (compared by content), which every open console receives.
 */
export class ProxyTable {
  private rows = new Map<string, { row: ProxyRow; key: string }>();

  update(conns: readonly Connection[]): RowDelta {
    const next = new Map<string, { row: ProxyRow; key: string }>();
    const upsert: ProxyRow[] = [];
    for (const c of conns) {
      const row = proxyRow(c);
      const key = JSON.stringify(row);
      next.set(row.id, { row, key });
      if (this.rows.get(row.id)?.key !== key) upsert.push(row);
    }
    const remove = [...this.rows.keys()].filter((id) => !next.has(id));
    this.rows = next;
    return { upsert, remove };
  }

  all(): ProxyRow[] {
    return [...this.rows.values()].map((r) => r.row);
  }

  counts(): ProxyCounts {
    return countRows([...this.rows.values()].map((r) => r.row));
  }
}
