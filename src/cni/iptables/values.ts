/**
 * Parsers for the scalar values istio-iptables takes (ports, CIDRs, addresses, interface and
 * owner names). Each returns a reason string on failure so the caller can name the option.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const bad = (reason: string): Parsed<never> => ({ ok: false, reason });

/** Splits a comma list as Istio does (empty items dropped), trimming blanks around items. */
export function splitList(s: string): string[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

export function parsePort(s: string): Parsed<number> {
  if (!/^\d+$/.test(s)) return bad(`"${s}" is not a port number`);
  const n = Number(s);
  if (n < 1 || n > 65535) return bad(`port ${s} is out of range 1-65535`);
  return ok(n);
}

export function parsePortList(s: string): Parsed<number[]> {
  const out: number[] = [];
  for (const item of splitList(s)) {
    const p = parsePort(item);
    if (!p.ok) return p;
    out.push(p.value);
  }
  return ok(out);
}

/** An unsigned decimal in [min, max] (marks, route tables). */
export function parseUint(s: string, min: number, max: number): Parsed<number> {
  if (!/^\d+$/.test(s)) return bad(`"${s}" is not a decimal number`);
  const n = Number(s);
  if (n < min || n > max) return bad(`${s} is out of range ${min}-${max}`);
  return ok(n);
}

export interface Cidr {
  /** As Go's netip.Prefix prints it: address (not masked) "/" bits, IPv6 in RFC 5952 form. */
  readonly text: string;
  readonly family: 4 | 6;
  readonly loopback: boolean;
}

function parseV4(s: string): number[] | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  const octets: number[] = [];
  for (const p of parts) {
    // Go's netip rejects leading zeros (ambiguous octal), so do we.
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    octets.push(n);
  }
  return octets;
}

/** Parses an IPv6 address into 8 hextets (an embedded dotted IPv4 tail allowed), or undefined. */
function parseV6(s: string): number[] | undefined {
  if (s.includes('%')) return undefined; // zones have no meaning in a rule
  let tail: number[] = [];
  let head = s;
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = [((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0)];
    head = s.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string): number[] | undefined => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = groups(halves[0] ?? '');
  const right = halves.length === 2 ? groups(halves[1] ?? '') : [];
  if (!left || !right) return undefined;
  const known = left.length + right.length + tail.length;
  if (halves.length === 2) {
    if (known > 7) return undefined;
    return [...left, ...new Array<number>(8 - known).fill(0), ...right, ...tail];
  }
  return known === 8 ? [...left, ...tail] : undefined;
}

/** RFC 5952 text (longest zero run of 2+ compressed, first wins), IPv4-mapped as ::ffff:a.b.c.d. */
function formatV6(h: number[]): string {
  if (h.slice(0, 5).every((x) => x === 0) && h[5] === 0xffff) {
    const a = h[6] ?? 0;
    const b = h[7] ?? 0;
    return `::ffff:${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (h[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && h[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (xs: number[]): string => xs.map((x) => x.toString(16)).join(':');
  if (best < 0) return hex(h);
  return `${hex(h.slice(0, best))}::${hex(h.slice(best + bestLen))}`;
}

export interface IpAddr {
  readonly text: string;
  readonly family: 4 | 6;
  readonly loopback: boolean;
}

export function parseIp(s: string): Parsed<IpAddr> {
  const v4 = parseV4(s);
  if (v4) return ok({ text: v4.join('.'), family: 4, loopback: v4[0] === 127 });
  const v6 = parseV6(s);
  if (v6) {
    const loopback = v6.slice(0, 7).every((x) => x === 0) && v6[7] === 1;
    return ok({ text: formatV6(v6), family: 6, loopback });
  }
  return bad(`"${s}" is not an IP address`);
}

export function parseCidr(s: string): Parsed<Cidr> {
  const slash = s.indexOf('/');
  if (slash < 0) return bad(`"${s}" is not a CIDR (missing /prefix-length)`);
  const ip = parseIp(s.slice(0, slash));
  if (!ip.ok) return bad(`"${s}" is not a CIDR: ${ip.reason}`);
  const bitsText = s.slice(slash + 1);
  const max = ip.value.family === 4 ? 32 : 128;
  if (!/^(0|[1-9]\d*)$/.test(bitsText) || Number(bitsText) > max) {
    return bad(`"${s}" is not a CIDR: prefix length must be 0-${max}`);
  }
  return ok({ text: `${ip.value.text}/${bitsText}`, family: ip.value.family, loopback: ip.value.loopback });
}

export function parseCidrList(s: string): Parsed<Cidr[]> {
  const out: Cidr[] = [];
  for (const item of splitList(s)) {
    const c = parseCidr(item);
    if (!c.ok) return c;
    out.push(c.value);
  }
  return ok(out);
}

/** Interface names as Istio validates them: a letter first, then [A-Za-z0-9_.-], at most 15 chars. */
export function parseInterfaceList(s: string): Parsed<string[]> {
  const out = splitList(s);
  for (const name of out) {
    if (name.length > 15) return bad(`interface name "${name}" is longer than 15 characters`);
    if (!/^[a-zA-Z][a-zA-Z0-9_.-]*$/.test(name)) return bad(`interface name "${name}" has invalid characters`);
  }
  return ok(out);
}

/** uid/gid lists for `-m owner`: numbers (< 2^32-1) or user/group names iptables resolves. */
export function parseOwnerList(s: string, what: 'uid' | 'gid' | 'group'): Parsed<string[]> {
  const out = splitList(s);
  for (const v of out) {
    if (/^\d+$/.test(v)) {
      if (Number(v) > 4294967294) return bad(`${what} ${v} is out of range`);
    } else if (!/^[a-zA-Z_][a-zA-Z0-9_.-]*\$?$/.test(v)) {
      return bad(`"${v}" is neither a numeric ${what} nor a valid name`);
    }
  }
  return ok(out);
}

/** Go's strconv.ParseBool, which pflag and Istio's env handling use. */
export function parseBool(s: string): Parsed<boolean> {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return ok(true);
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return ok(false);
  return bad(`"${s}" is not a boolean (true/false/1/0)`);
}
