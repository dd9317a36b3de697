import type { DiscoveryServer } from '../xds/discovery-server.js';
import type { Connection } from '../xds/connection.js';
import { shortType } from '../xds/type-urls.js';
import type { WatchedResource } from '../xds/watched-resource.js';
import type { Handler } from './http-server.js';

/** istiod's per-type sync state: SYNCED (ACKed the last response), NACKED, STALE (sent, not ACKed), NOT SENT. */
export function syncStatus(w: WatchedResource | undefined): 'SYNCED' | 'NACKED' | 'STALE' | 'NOT SENT' {
  if (!w?.nonceSent) return 'NOT SENT';
  if (w.nonceAcked === w.nonceSent) return 'SYNCED';
  if (w.lastError?.nonce === w.nonceSent) return 'NACKED';
  return 'STALE';
}

function connectionSync(c: Connection): Record<string, unknown> {
  return {
    proxy: c.proxy.id,
    connection: c.id,
    peer: c.peer,
    connectedAt: new Date(c.connectedAt).toISOString(),
    types: Object.fromEntries(
      c.watchedTypes().map((w) => [
        shortType(w.typeUrl),
        {
          status: syncStatus(w),
          nonceSent: w.nonceSent ?? '',
          nonceAcked: w.nonceAcked ?? '',
          versionSent: w.versionSent ?? '',
          versionAcked: w.versionAcked ?? '',
          resourceNames: w.wildcard ? ['*'] : [...w.names].sort(),
          ...(w.lastError ? { lastNack: { nonce: w.lastError.nonce, message: w.lastError.message, at: new Date(w.lastError.at).toISOString() } } : {}),
        },
      ]),
    ),
  };
}

/** The debug endpoints available so far (issue 3 completes istiod's set). */
export function debugHandlers(ds: DiscoveryServer): Map<string, Handler> {
  return new Map<string, Handler>([
    ['/debug/syncz', () => ({ status: 200, body: ds.connectionList().map(connectionSync) })],
    [
      '/debug/adsz',
      () => ({
        status: 200,
        body: {
          totalClients: ds.connectionList().length,
          pushVersion: ds.push().version,
          stats: ds.stats.snapshot(),
          clients: ds.connectionList().map((c) => ({ proxy: c.proxy.id, connection: c.id, bytesSent: c.bytesSent() })),
        },
      }),
    ],
  ]);
}
