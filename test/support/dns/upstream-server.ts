/**
 * A tiny authoritative DNS server for tests (UDP and TCP on one port): it answers A and AAAA from a
 * fixed map, NXDOMAIN for other names, and counts the queries it saw, so a test can tell what the
 * agent forwarded. Built on the agent's own wire code; run it in a network namespace with
 * upstream-main.ts.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { buildReply, parseQuery, RCODE_NOERROR, RCODE_NXDOMAIN, TYPE_A, TYPE_AAAA, type DnsRecord } from '../../../src/agent/dns/wire.js';

export interface UpstreamDns {
  readonly port: number;
  /** Lower-case names asked, in order, with the protocol. */
  readonly asked: { name: string; protocol: 'udp' | 'tcp' }[];
  stop(): Promise<void>;
}

/** name (lower case, no trailing dot) → addresses. */
export type UpstreamRecords = Readonly<Record<string, readonly string[]>>;

function answer(packet: Buffer, records: UpstreamRecords, asked: UpstreamDns['asked'], protocol: 'udp' | 'tcp'): Buffer | undefined {
  let q;
  try {
    q = parseQuery(packet);
  } catch {
    return undefined;
  }
  const name = q.question.name.toLowerCase();
  asked.push({ name, protocol });
  const ips = records[name];
  if (!ips) return buildReply(q, { rcode: RCODE_NXDOMAIN });
  const answers: DnsRecord[] = ips
    .filter((ip) => (net.isIP(ip) === 4 ? q.question.type === TYPE_A : q.question.type === TYPE_AAAA))
    .map((address) => ({ name: q.question.name, type: net.isIP(address) === 4 ? TYPE_A : TYPE_AAAA, ttl: 60, address }));
  return buildReply(q, { rcode: RCODE_NOERROR, answers });
}

export async function startUpstreamDns(host: string, port: number, records: UpstreamRecords): Promise<UpstreamDns> {
  const asked: UpstreamDns['asked'] = [];
  const udp = dgram.createSocket(net.isIP(host) === 6 ? 'udp6' : 'udp4');
  udp.on('message', (msg, from) => {
    const reply = answer(msg, records, asked, 'udp');
    if (reply) udp.send(reply, from.port, from.address);
  });
  await new Promise<void>((resolve) => udp.bind(port, host, () => resolve()));
  const bound = udp.address().port;
  const tcp = net.createServer((c) => {
    let buf: Buffer = Buffer.alloc(0);
    c.on('error', () => c.destroy());
    c.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const len = buf.readUInt16BE(0);
        const reply = answer(buf.subarray(2, 2 + len), records, asked, 'tcp');
        buf = buf.subarray(2 + len);
        if (reply) {
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(reply.length);
          c.write(Buffer.concat([prefix, reply]));
        }
      }
    });
  });
  await new Promise<void>((resolve) => tcp.listen(bound, host, () => resolve()));
  return {
    port: bound,
    asked,
    stop: async () => {
      udp.close();
      await new Promise<void>((r) => tcp.close(() => r()));
    },
  };
}

/** One query over UDP (or TCP), resolving to the reply's bytes; rejects after `timeoutMs`. */
export function queryDns(
  server: { host: string; port: number },
  packet: Buffer,
  protocol: 'udp' | 'tcp' = 'udp',
  timeoutMs = 3000,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (protocol === 'udp') {
      const s = dgram.createSocket(net.isIP(server.host) === 6 ? 'udp6' : 'udp4');
      const timer = setTimeout(() => {
        s.close();
        reject(new Error(`no UDP answer from ${server.host}:${server.port}`));
      }, timeoutMs);
      s.on('message', (m) => {
        clearTimeout(timer);
        s.close();
        resolve(m);
      });
      s.send(packet, server.port, server.host);
      return;
    }
    const c = net.connect(server.port, server.host);
    let buf: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => {
      c.destroy();
      reject(new Error(`no TCP answer from ${server.host}:${server.port}`));
    }, timeoutMs);
    c.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    c.on('connect', () => {
      const prefix = Buffer.alloc(2);
      prefix.writeUInt16BE(packet.length);
      c.write(Buffer.concat([prefix, packet]));
    });
    c.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        clearTimeout(timer);
        c.destroy();
        resolve(Buffer.from(buf.subarray(2, 2 + buf.readUInt16BE(0))));
      }
    });
  });
}
