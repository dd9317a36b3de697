import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { parseGoDurationMs } from '../../util/duration.js';
import { UsageError } from '../io.js';
import type { XdsDebugOptions } from './xds-debug-client.js';

export interface ConnectionFlags {
  xdsAddress?: string[];
  certDir?: string;
  token?: string;
  xdsSan?: string;
  timeout: string;
}

/** The flags every proxy-status / proxy-config command takes to reach the control plane. */
export function addConnectionFlags(cmd: Command): Command {
  return cmd
    .option(
      '--xds-address <host:port>',
      'control plane xDS address; repeat (or comma-separate) for several replicas (default 127.0.0.1:15010 plaintext, 127.0.0.1:15012 with --cert-dir)',
      (v: string, acc: string[] | undefined) => [...(acc ?? []), ...v.split(',').filter((s) => s !== '')],
    )
    .option('--cert-dir <dir>', 'use TLS: root-cert.pem (and cert-chain.pem + key.pem for a client certificate) from this directory')
    .option('--token <jwt>', 'bearer token sent to the control plane (with --cert-dir)')
    .option('--xds-san <name>', 'name the control plane certificate must carry', 'istiod.istio-system.svc')
    .option('--timeout <duration>', 'how long to wait for the control plane (a duration: 30s, 2m, 1m30s, 500ms)', '10s');
}

function read(dir: string, file: string): string | undefined {
  const p = join(dir, file);
  return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
}

/** Parses the connection flags into one debug-client option set per replica address. */
export function connectionOptions(f: ConnectionFlags): { addresses: string[]; conn: Omit<XdsDebugOptions, 'address'> } {
  // A duration with its unit, as istioctl's flags take them: a bare number is refused, not read as ms.
  const timeoutMs = parseGoDurationMs(f.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0)
    throw new UsageError(`invalid --timeout "${f.timeout}": give a duration with a unit, e.g. --timeout 30s or --timeout 2m`);
  if (f.token !== undefined && f.certDir === undefined)
    throw new UsageError('--token needs TLS: pass --cert-dir with the mesh root certificate (root-cert.pem)');
  let tls: XdsDebugOptions['tls'];
  if (f.certDir !== undefined) {
    const root = read(f.certDir, 'root-cert.pem');
    if (root === undefined)
      throw new UsageError(`--cert-dir ${f.certDir} has no root-cert.pem: point it at the directory holding the mesh root certificate`);
    const chain = read(f.certDir, 'cert-chain.pem');
    const key = read(f.certDir, 'key.pem');
    tls = {
      rootCertPem: root,
      ...(f.xdsSan !== undefined ? { serverName: f.xdsSan } : {}),
      ...(chain !== undefined && key !== undefined ? { clientCertChainPem: chain, clientKeyPem: key } : {}),
    };
  }
  const addresses = f.xdsAddress && f.xdsAddress.length > 0 ? f.xdsAddress : [tls ? '127.0.0.1:15012' : '127.0.0.1:15010'];
  return { addresses, conn: { timeoutMs, ...(tls ? { tls } : {}), ...(f.token !== undefined ? { token: f.token } : {}) } };
}
