import { isIP } from 'node:net';

/** An IPv4 or IPv6 address as the workload API's bytes (4 or 16); undefined when it is not an IP. */
export function ipBytes(ip: string): Uint8Array | undefined {
  const kind = isIP(ip);
  if (kind === 4) return Uint8Array.from(ip.split('.').map(Number));
  if (kind !== 6) return undefined;
  // Expand `::` and an embedded IPv4 tail into eight 16-bit groups.
  let text = ip.split('%')[0] ?? ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const b = v4[1].split('.').map(Number);
    text = `${text.slice(0, -v4[1].length)}${(((b[0] ?? 0) << 8) | (b[1] ?? 0)).toString(16)}:${(((b[2] ?? 0) << 8) | (b[3] ?? 0)).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}
