/**
 * The DNS wire format (RFC 1035 §4, EDNS0 of RFC 6891), as much as the agent's DNS proxy needs:
 * read a query's header, its question and its advertised UDP size; write answers of A, AAAA and
 * CNAME records. Every read is bounds-checked and compression pointers may only point backwards,
 * so a hostile packet ends in a DnsFormatError, never in an exception of another kind or a loop.
 */

export const TYPE_A = 1;
export const TYPE_CNAME = 5;
export const TYPE_AAAA = 28;
export const TYPE_OPT = 41;
export const CLASS_IN = 1;

export const RCODE_NOERROR = 0;
export const RCODE_FORMERR = 1;
export const RCODE_SERVFAIL = 2;
export const RCODE_NXDOMAIN = 3;
export const RCODE_NOTIMP = 4;

export const HEADER_SIZE = 12;
/** The smallest UDP size a client must accept, and the default without EDNS. */
export const MIN_UDP_SIZE = 512;
/** The largest DNS message (TCP's 16-bit length prefix). */
export const MAX_MESSAGE_SIZE = 65535;
const MAX_NAME_LENGTH = 255;
const MAX_LABEL_LENGTH = 63;

export class DnsFormatError extends Error {
  constructor(message: string) {
    super(`malformed DNS message: ${message}`);
    this.name = 'DnsFormatError';
  }
}

export interface DnsHeader {
  readonly id: number;
  /** QR: a response. */
  readonly response: boolean;
  readonly opcode: number;
  readonly authoritative: boolean;
  readonly truncated: boolean;
  readonly recursionDesired: boolean;
  readonly recursionAvailable: boolean;
  /** CD (RFC 4035): copied into replies, as resolvers do. */
  readonly checkingDisabled: boolean;
  readonly rcode: number;
  readonly qdcount: number;
  readonly ancount: number;
  readonly nscount: number;
  readonly arcount: number;
}

export interface DnsQuestion {
  /** As sent (case kept), without the trailing dot; '' is the root. */
  readonly name: string;
  readonly type: number;
  readonly class: number;
}

export interface DnsQuery {
  readonly header: DnsHeader;
  readonly question: DnsQuestion;
  /** The UDP payload size the client advertised in an OPT record, or undefined without EDNS. */
  readonly ednsUdpSize?: number;
}

/** The 12-byte header, or a DnsFormatError when the packet is shorter. */
export function readHeader(buf: Uint8Array): DnsHeader {
  if (buf.length < HEADER_SIZE) throw new DnsFormatError(`${buf.length} bytes, shorter than the ${HEADER_SIZE}-byte header`);
  const u16 = (o: number): number => (buf[o]! << 8) | buf[o + 1]!;
  const flags = u16(2);
  return {
    id: u16(0),
    response: (flags & 0x8000) !== 0,
    opcode: (flags >> 11) & 0xf,
    authoritative: (flags & 0x0400) !== 0,
    truncated: (flags & 0x0200) !== 0,
    recursionDesired: (flags & 0x0100) !== 0,
    recursionAvailable: (flags & 0x0080) !== 0,
    checkingDisabled: (flags & 0x0010) !== 0,
    rcode: flags & 0xf,
    qdcount: u16(4),
    ancount: u16(6),
    nscount: u16(8),
    arcount: u16(10),
  };
}

/** Reads a (possibly compressed) name at `offset`: the name and the offset just past it in the message. */
export function readName(buf: Uint8Array, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let pos = offset;
  let next = -1;
  let length = 0;
  // Each pointer must go strictly backwards: no loops, and at most buf.length jumps.
  let limit = pos;
  for (;;) {
    if (pos >= buf.length) throw new DnsFormatError(`name at ${offset} runs past the end`);
    const len = buf[pos]!;
    if ((len & 0xc0) === 0xc0) {
      if (pos + 1 >= buf.length) throw new DnsFormatError(`compression pointer at ${pos} is cut off`);
      const target = ((len & 0x3f) << 8) | buf[pos + 1]!;
      if (target >= limit) throw new DnsFormatError(`compression pointer at ${pos} does not point backwards`);
      if (next < 0) next = pos + 2;
      limit = target;
      pos = target;
      continue;
    }
    if ((len & 0xc0) !== 0) throw new DnsFormatError(`label type 0x${(len & 0xc0).toString(16)} at ${pos} is not supported`);
    if (len === 0) {
      if (next < 0) next = pos + 1;
      break;
    }
    if (pos + 1 + len > buf.length) throw new DnsFormatError(`label at ${pos} runs past the end`);
    length += len + 1;
    if (length > MAX_NAME_LENGTH) throw new DnsFormatError(`name at ${offset} is longer than ${MAX_NAME_LENGTH} bytes`);
    labels.push(escapeLabel(buf.subarray(pos + 1, pos + 1 + len)));
    pos += 1 + len;
  }
  return { name: labels.join('.'), next };
}

/** A label as text: printable ASCII as is, dots and backslashes escaped, other bytes as \DDD (RFC 4343). */
function escapeLabel(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) {
    if (b === 0x2e || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b > 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${b.toString().padStart(3, '0')}`;
  }
  return out;
}

/** Skips a resource record at `offset`; returns its type, its RDATA bounds and the CLASS/TTL fields (OPT keeps its UDP size in CLASS). */
function readRecord(buf: Uint8Array, offset: number): { type: number; cls: number; next: number } {
  const { next: afterName } = readName(buf, offset);
  if (afterName + 10 > buf.length) throw new DnsFormatError(`record at ${offset} is cut off`);
  const type = (buf[afterName]! << 8) | buf[afterName + 1]!;
  const cls = (buf[afterName + 2]! << 8) | buf[afterName + 3]!;
  const rdlength = (buf[afterName + 8]! << 8) | buf[afterName + 9]!;
  const next = afterName + 10 + rdlength;
  if (next > buf.length) throw new DnsFormatError(`record data at ${afterName + 10} runs past the end`);
  return { type, cls, next };
}

/** A query with exactly one question (what resolvers send); its EDNS UDP size when it has an OPT record. */
export function parseQuery(buf: Uint8Array): DnsQuery {
  const header = readHeader(buf);
  if (header.qdcount !== 1) throw new DnsFormatError(`${header.qdcount} questions; a query has one`);
  const { name, next } = readName(buf, HEADER_SIZE);
  if (next + 4 > buf.length) throw new DnsFormatError('question is cut off');
  const question = { name, type: (buf[next]! << 8) | buf[next + 1]!, class: (buf[next + 2]! << 8) | buf[next + 3]! };
  let pos = next + 4;
  let ednsUdpSize: number | undefined;
  const records = header.ancount + header.nscount + header.arcount;
  for (let i = 0; i < records; i++) {
    const r = readRecord(buf, pos);
    if (r.type === TYPE_OPT && i >= header.ancount + header.nscount) ednsUdpSize = r.cls;
    pos = r.next;
  }
  return { header, question, ...(ednsUdpSize !== undefined ? { ednsUdpSize } : {}) };
}

/** One answer record. */
export type DnsRecord =
  | { readonly name: string; readonly type: typeof TYPE_A | typeof TYPE_AAAA; readonly ttl: number; readonly address: string }
  | { readonly name: string; readonly type: typeof TYPE_CNAME; readonly ttl: number; readonly target: string };

/** Grows as it is written; names are written whole (no compression), which keeps every record self-contained. */
class Writer {
  private buf = Buffer.alloc(512);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const bigger = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }

  u8(v: number): this {
    this.room(1);
    this.buf[this.length++] = v & 0xff;
    return this;
  }

  u16(v: number): this {
    return this.u8(v >> 8).u8(v);
  }

  u32(v: number): this {
    return this.u16((v >>> 16) & 0xffff).u16(v & 0xffff);
  }

  bytes(b: Uint8Array): this {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
    return this;
  }

  name(name: string): this {
    for (const label of splitName(name)) this.u8(label.length).bytes(label);
    return this.u8(0);
  }

  at(offset: number, v: number): void {
    this.buf[offset] = (v >> 8) & 0xff;
    this.buf[offset + 1] = v & 0xff;
  }

  done(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.length));
  }
}

/** The wire labels of a name in text form (escapes of escapeLabel undone). */
export function splitName(name: string): Uint8Array[] {
  const trimmed = name.endsWith('.') && !name.endsWith('\\.') ? name.slice(0, -1) : name;
  if (trimmed === '') return [];
  const labels: Uint8Array[] = [];
  let cur: number[] = [];
  for (let i = 0; i < trimmed.length; i++) {
    const c = trimmed.charCodeAt(i);
    if (c === 0x5c && i + 1 < trimmed.length) {
      const digits = /^\d{3}/.exec(trimmed.slice(i + 1));
      if (digits) {
        cur.push(Number(digits[0]) & 0xff);
        i += 3;
      } else cur.push(trimmed.charCodeAt(++i) & 0xff);
    } else if (c === 0x2e) {
      labels.push(Uint8Array.from(cur));
      cur = [];
    } else cur.push(c & 0xff);
  }
  labels.push(Uint8Array.from(cur));
  for (const l of labels)
    if (l.length === 0 || l.length > MAX_LABEL_LENGTH) throw new DnsFormatError(`bad label in name ${JSON.stringify(name)}`);
  return labels;
}

function ipBytes(address: string, type: number): Uint8Array {
  if (type === TYPE_A) return Uint8Array.from(address.split('.').map(Number));
  // Expand :: and embedded IPv4 into 8 groups.
  let text = address;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a = 0, b = 0, c = 0, d = 0] = v4[1]!.split('.').map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}

export interface ReplyOptions {
  readonly rcode: number;
  readonly authoritative?: boolean;
  readonly answers?: readonly DnsRecord[];
  /** Largest size allowed (the client's UDP size; 65535 over TCP): answers that do not fit are dropped and TC set. */
  readonly maxSize?: number;
}

/**
 * A reply to `query` (miekg/dns SetReply): same id, opcode, RD and CD; QR set; the question echoed
 * as asked. Answers that would exceed `maxSize` are left out, and the reply is marked truncated.
 */
export function buildReply(query: { header: DnsHeader; question?: DnsQuestion }, o: ReplyOptions): Buffer {
  const w = new Writer();
  const h = query.header;
  let flags = 0x8000 | ((h.opcode & 0xf) << 11) | (o.rcode & 0xf);
  if (o.authoritative) flags |= 0x0400;
  if (h.recursionDesired) flags |= 0x0100;
  if (h.checkingDisabled) flags |= 0x0010;
  w.u16(h.id)
    .u16(flags)
    .u16(query.question ? 1 : 0)
    .u16(0)
    .u16(0)
    .u16(0);
  if (query.question) w.name(query.question.name).u16(query.question.type).u16(query.question.class);
  const max = o.maxSize ?? MAX_MESSAGE_SIZE;
  let count = 0;
  for (const r of o.answers ?? []) {
    const before = w.length;
    w.name(r.name).u16(r.type).u16(CLASS_IN).u32(r.ttl);
    if (r.type === TYPE_CNAME) {
      const lenAt = w.length;
      w.u16(0).name(r.target);
      w.at(lenAt, w.length - lenAt - 2);
    } else {
      const ip = ipBytes(r.address, r.type);
      w.u16(ip.length).bytes(ip);
    }
    if (w.length > max) {
      w.length = before;
      w.at(2, flags | 0x0200);
      break;
    }
    count++;
  }
  w.at(6, count);
  return w.done();
}

/** A reply carrying only a response code (SERVFAIL, FORMERR, NOTIMP), to a header that could be read. */
export function errorReply(header: DnsHeader, rcode: number, question?: DnsQuestion): Buffer {
  return buildReply({ header, ...(question ? { question } : {}) }, { rcode });
}

/**
 * An upstream reply made to fit `maxSize` for the client (UDP): cut to its header and question,
 * with TC set, so the client asks again over TCP. Smaller replies pass as they are.
 */
export function fitReply(reply: Buffer, maxSize: number): Buffer {
  if (reply.length <= maxSize) return reply;
  const header = readHeader(reply);
  let end = HEADER_SIZE;
  for (let i = 0; i < header.qdcount; i++) end = readName(reply, end).next + 4;
  if (end > reply.length) throw new DnsFormatError('question is cut off');
  const out = Buffer.from(reply.subarray(0, end));
  out[2] = out[2]! | 0x02;
  out.writeUInt16BE(0, 6);
  out.writeUInt16BE(0, 8);
  out.writeUInt16BE(0, 10);
  return out;
}

/** A query for `name` (the test peers and the upstream tests build theirs with it). */
export function buildQuery(
  id: number,
  name: string,
  type: number,
  opts: { recursionDesired?: boolean; ednsUdpSize?: number } = {},
): Buffer {
  const w = new Writer();
  w.u16(id)
    .u16(opts.recursionDesired === false ? 0 : 0x0100)
    .u16(1)
    .u16(0)
    .u16(0)
    .u16(opts.ednsUdpSize !== undefined ? 1 : 0);
  w.name(name).u16(type).u16(CLASS_IN);
  if (opts.ednsUdpSize !== undefined) w.u8(0).u16(TYPE_OPT).u16(opts.ednsUdpSize).u32(0).u16(0);
  return w.done();
}

/** The answer records of a reply, decoded (A, AAAA, CNAME; others skipped): for tests and logs. */
export function readAnswers(buf: Uint8Array): { header: DnsHeader; answers: DnsRecord[] } {
  const header = readHeader(buf);
  let pos = HEADER_SIZE;
  for (let i = 0; i < header.qdcount; i++) pos = readName(buf, pos).next + 4;
  const answers: DnsRecord[] = [];
  for (let i = 0; i < header.ancount; i++) {
    const { name, next } = readName(buf, pos);
    const r = readRecord(buf, pos);
    const type = (buf[next]! << 8) | buf[next + 1]!;
    const ttl = ((buf[next + 4]! << 24) | (buf[next + 5]! << 16) | (buf[next + 6]! << 8) | buf[next + 7]!) >>> 0;
    const rdata = buf.subarray(next + 10, r.next);
    if (type === TYPE_A && rdata.length === 4) answers.push({ name, type, ttl, address: [...rdata].join('.') });
    else if (type === TYPE_AAAA && rdata.length === 16) {
      const groups: string[] = [];
      for (let g = 0; g < 8; g++) groups.push(((rdata[g * 2]! << 8) | rdata[g * 2 + 1]!).toString(16));
      answers.push({ name, type, ttl, address: new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1) });
    } else if (type === TYPE_CNAME) answers.push({ name, type, ttl, target: readName(buf, next + 10).name });
    pos = r.next;
  }
  return { header, answers };
}
