/**
 * What `meshpilot discovery` tells a person at start-up, once the first config load is applied:
 * what it loaded (objects by kind, errors), where it listens, and how to connect to it.
 */
import { KIND_NAMES, type KindName } from '../config/index.js';
import type { LogFields } from '../util/log.js';

export interface StartupState {
  /** Objects in the store by kind (kinds with none may be left out). */
  readonly objectsByKind: ReadonlyMap<KindName, number>;
  /** Config errors of every source (invalid documents, files that do not parse, duplicates). */
  readonly errors: number;
  readonly grpcAddress: string;
  readonly secureGrpcAddress: string | undefined;
  readonly httpAddress: string;
  readonly monitoringAddress: string;
  readonly webhookAddress: string | undefined;
}

export interface SummaryLine {
  readonly msg: string;
  readonly fields: LogFields;
}

/** Objects by kind in the store (every kind, in the order of KIND_NAMES). */
export function countObjects(list: (kind: KindName) => readonly unknown[]): Map<KindName, number> {
  return new Map(KIND_NAMES.map((k) => [k, list(k).length]));
}

/** An address a local client can dial: a wildcard bind becomes loopback. */
export function dialable(addr: string): string {
  const m = /^(?:\[([^\]]*)\]|([^:]*)):(\d+)$/.exec(addr);
  if (!m) return addr;
  const host = m[1] ?? m[2] ?? '';
  if (host === '' || host === '0.0.0.0') return `127.0.0.1:${m[3]}`;
  if (host === '::') return `[::1]:${m[3]}`;
  return addr;
}

/** The summary lines, in order: config, listeners, how to connect. */
export function startupSummary(s: StartupState): SummaryLine[] {
  const kinds: Record<string, number> = {};
  let objects = 0;
  for (const [kind, n] of s.objectsByKind) {
    if (n === 0) continue;
    kinds[kind] = n;
    objects += n;
  }
  const byKind = Object.entries(kinds)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  const errors = `${s.errors} error${s.errors === 1 ? '' : 's'}${s.errors > 0 ? ' (logged above as invalid config)' : ''}`;
  const listeners: [string, string | undefined, string][] = [
    ['xDS gRPC', s.grpcAddress, 'grpc'],
    ['xDS gRPC TLS + CA', s.secureGrpcAddress, 'secureGrpc'],
    ['HTTP (ready, debug)', s.httpAddress, 'http'],
    ['monitoring', s.monitoringAddress, 'monitoring'],
    ['webhooks HTTPS', s.webhookAddress, 'webhooks'],
  ];
  const listening: LogFields = {};
  for (const [, addr, key] of listeners) if (addr !== undefined) listening[key] = addr;
  const xds = dialable(s.grpcAddress);
  const proxyXds = dialable(s.secureGrpcAddress ?? s.grpcAddress);
  return [
    {
      msg: `config loaded: ${objects} object${objects === 1 ? '' : 's'}${byKind ? ` (${byKind})` : ''}, ${errors}`,
      fields: { objects, errors: s.errors, kinds },
    },
    {
      msg: `listening: ${listeners
        .filter(([, a]) => a !== undefined)
        .map(([what, a]) => `${what} ${a}`)
        .join(', ')}`,
      fields: listening,
    },
    {
      msg: `connect: meshctl proxy-status --xds-address ${xds} lists the connected proxies; a proxy connects with meshpilot agent --xdsAddr ${proxyXds}${s.secureGrpcAddress === undefined ? ' --xdsTransport plaintext' : ''}`,
      fields: { xdsAddress: xds, proxyXdsAddress: proxyXds },
    },
  ];
}
