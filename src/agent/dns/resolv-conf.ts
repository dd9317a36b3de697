/**
 * The resolvers and search domains of /etc/resolv.conf (resolv.conf(5), as miekg/dns reads it for
 * istio-agent): `nameserver` lines in order, port 53, and the `search` list (or `domain`, which
 * is a one-entry search list; the last of the two wins). Other lines are ignored.
 */
import { isIP } from 'node:net';
import { readFile } from 'node:fs/promises';
import { MeshError, errorMessage } from '../../util/errors.js';

export interface ResolvConf {
  /** `host:port` (IPv6 in brackets). */
  readonly servers: readonly { readonly host: string; readonly port: number }[];
  readonly search: readonly string[];
}

export function parseResolvConf(text: string, file = 'resolv.conf'): ResolvConf {
  const servers: { host: string; port: number }[] = [];
  let search: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (line === '') return;
    const [key, ...values] = line.split(/\s+/);
    if (key === 'nameserver') {
      // A link-local IPv6 server may carry its zone (fe80::1%eth0).
      const host = values[0] ?? '';
      if (isIP(host.split('%')[0] ?? '') === 0)
        throw new MeshError('INVALID_ARGUMENT', `${file}:${i + 1}: nameserver ${JSON.stringify(host)} is not an IP address`);
      servers.push({ host, port: 53 });
    } else if (key === 'search') search = values;
    else if (key === 'domain') search = values.slice(0, 1);
  });
  return { servers, search };
}

export async function readResolvConf(file: string): Promise<ResolvConf> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `DNS proxy: cannot read ${file}: ${errorMessage(err)}`, { cause: err });
  }
  return parseResolvConf(text, file);
}
