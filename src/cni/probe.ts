import { readFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { MeshError } from '../util/errors.js';
import type { Exec } from './exec.js';
import { parseIp } from './iptables/values.js';

/**
 * What istio-iptables reads from the pod's environment rather than from its flags
 * (tools/common/config FillConfigFromEnvironment): whether the pod has IPv6, the resolv.conf name
 * servers for DNS capture, and the proxy's uid by user name.
 */

export interface PodAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

function eligible(a: string, family: 4 | 6): boolean {
  const ip = parseIp(a);
  if (!ip.ok || ip.value.loopback) return false;
  const t = ip.value.text;
  if (family === 4) return !t.startsWith('169.254.');
  return !/^fe[89ab][0-9a-f]?:/i.test(t) && !/^ff[0-9a-f]2:/i.test(t);
}

/**
 * Istio takes the first non-loopback, non-link-local address; the kernel lists IPv4 before IPv6,
 * so IPv6 is enabled for an IPv6-only pod, or with dual stack for any pod that has IPv6.
 */
export function ipv6Enabled(addresses: readonly PodAddress[], dualStack: boolean): boolean {
  const usable = addresses.filter((a) => eligible(a.address, a.family));
  const has6 = usable.some((a) => a.family === 6);
  return dualStack ? has6 : has6 && !usable.some((a) => a.family === 4);
}

/** Addresses of this process's namespace, or of another through `ip -j addr` there. */
export async function podAddresses(exec: Exec | undefined): Promise<PodAddress[]> {
  if (!exec) {
    return Object.values(networkInterfaces()).flatMap((list) =>
      (list ?? []).map((i) => ({ address: i.address, family: i.family === 'IPv4' ? (4 as const) : (6 as const) })),
    );
  }
  const r = await exec('ip', ['-j', 'addr', 'show']);
  if (r.code !== 0) throw new MeshError('UNAVAILABLE', `ip -j addr show failed: ${r.stderr.trim()}`);
  const links = JSON.parse(r.stdout) as Array<{ addr_info?: Array<{ family?: string; local?: string }> }>;
  return links.flatMap((l) =>
    (l.addr_info ?? []).flatMap((a) =>
      a.local && (a.family === 'inet' || a.family === 'inet6')
        ? [{ address: a.local, family: a.family === 'inet' ? (4 as const) : (6 as const) }]
        : [],
    ),
  );
}

/** `nameserver` addresses of a resolv.conf; unparsable ones (zoned IPv6) are skipped, as in Istio. */
export function resolvConfServers(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    if (m?.[1] && parseIp(m[1]).ok) out.push(m[1]);
  }
  return out;
}

export async function readResolvConf(path = '/etc/resolv.conf'): Promise<string[]> {
  try {
    return resolvConfServers(await readFile(path, 'utf8'));
  } catch (err) {
    throw new MeshError('UNAVAILABLE', `failed to load ${path} for DNS capture: ${(err as Error).message}`);
  }
}

/** The uid of `user` from /etc/passwd, or undefined (Istio then uses 1337). */
export async function lookupUid(user: string, passwdPath = '/etc/passwd'): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(passwdPath, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const [name, , uid] = line.split(':');
    if (name === user && uid && /^\d+$/.test(uid)) return uid;
  }
  return undefined;
}
