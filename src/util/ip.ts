/**
 * IP addresses as bytes, parsed by the rules of Go's net/netip (ParseAddr, ParsePrefix), which
 * istiod uses wherever it puts an address on the wire as bytes (the ambient workload API): IPv4 is
 * four decimal fields without leading zeros; IPv6 may compress zeros with `::`, end in an IPv4
 * quad and (for an address, not a prefix) carry a `%zone`, which the bytes do not keep.
 */

/** One IP address, as Go's netip.Addr.AsSlice: 4 bytes for IPv4, 16 for IPv6 (IPv4-mapped IPv6 stays 16). */
export function ipAddressBytes(text: string): Uint8Array | undefined {
  if (text.includes(':')) {
    const zone = text.indexOf('%');
    if (zone === text.length - 1) return undefined; // netip: a zone must not be empty
    return parseV6(zone >= 0 ? text.slice(0, zone) : text);
  }
  return parseV4(text);
}

/** A CIDR prefix as written (host bits kept, as netip.ParsePrefix keeps them): its address bytes and length. */
export function ipPrefixBytes(text: string): { readonly address: Uint8Array; readonly bits: number } | undefined {
  const slash = text.lastIndexOf('/');
  if (slash < 0) return undefined;
  const addrText = text.slice(0, slash);
  if (addrText.includes('%')) return undefined; // netip: zones cannot be present in a prefix
  const address = ipAddressBytes(addrText);
  const bitsText = text.slice(slash + 1);
  if (!address || !/^(0|[1-9]\d{0,2})$/.test(bitsText)) return undefined;
  const bits = Number(bitsText);
  return bits <= address.length * 8 ? { address, bits } : undefined;
}

/** The text of an address's bytes (4: dotted quad; 16: RFC 5952, longest zero run as `::`); undefined for another length. */
export function ipAddressText(bytes: Uint8Array): string | undefined {
  if (bytes.length === 4) return [...bytes].join('.');
  if (bytes.length !== 16) return undefined;
  const groups = [...Array(8).keys()].map((i) => ((bytes[i * 2] ?? 0) << 8) | (bytes[i * 2 + 1] ?? 0));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = (gs: number[]): string => gs.map((g) => g.toString(16)).join(':');
  if (best.at < 0) return hex(groups);
  return `${hex(groups.slice(0, best.at))}::${hex(groups.slice(best.at + best.len))}`;
}

function parseV4(text: string): Uint8Array | undefined {
  const fields = text.split('.');
  if (fields.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const f = fields[i] ?? '';
    if (!/^(0|[1-9]\d{0,2})$/.test(f) || Number(f) > 255) return undefined;
    out[i] = Number(f);
  }
  return out;
}

/** The 16-bit groups of one side of `::`; an IPv4 quad may end the address (then it is two groups). */
function groups(text: string, last: boolean): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const out: number[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] ?? '';
    if (last && i === parts.length - 1 && p.includes('.')) {
      const v4 = parseV4(p);
      if (!v4) return undefined;
      out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
    } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) {
      out.push(parseInt(p, 16));
    } else {
      return undefined;
    }
  }
  return out;
}

function parseV6(text: string): Uint8Array | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  let words: number[];
  if (halves.length === 2) {
    const left = groups(halves[0] ?? '', false);
    const right = groups(halves[1] ?? '', true);
    if (!left || !right || left.length + right.length > 7) return undefined;
    words = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  } else {
    const all = groups(text, true);
    if (!all || all.length !== 8) return undefined;
    words = all;
  }
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 255;
  });
  return out;
}
