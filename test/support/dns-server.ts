/**
 * A DNS server on loopback (UDP) for tests of code that resolves names itself: it answers A and
 * AAAA queries from a zone the test edits, SERVFAIL for the names it marks failing, and records
 * what it was asked (`name/type`).
 */
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { buildReply, parseQuery, RCODE_NOERROR, RCODE_SERVFAIL, TYPE_A, TYPE_AAAA, type DnsRecord } from '../../src/agent/dns/wire.js';

export interface TestDnsServer {
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  /** Name (lower case, no trailing dot) → addresses of either family. */
  readonly zone: Map<string, string[]>;
  readonly failing: Set<string>;
  readonly asked: string[];
  /** TTL of every answer, in seconds. */
  ttl: number;
  close(): Promise<void>;
}

export async function startTestDnsServer(): Promise<TestDnsServer> {
  const socket: Socket = createSocket('udp4');
  const zone = new Map<string, string[]>();
  const failing = new Set<string>();
  const asked: string[] = [];
  const server = { zone, failing, asked, ttl: 1 };
  socket.on('message', (msg, rinfo) => {
    const q = parseQuery(msg);
    asked.push(`${q.question.name}/${q.question.type}`);
    const name = q.question.name.toLowerCase();
    if (failing.has(name)) {
      socket.send(buildReply(q, { rcode: RCODE_SERVFAIL }), rinfo.port, rinfo.address);
      return;
    }
    const type = q.question.type;
    const answers: DnsRecord[] = (zone.get(name) ?? [])
      .filter((a) => (type === TYPE_A ? !a.includes(':') : type === TYPE_AAAA && a.includes(':')))
      .map((address) => ({ name: q.question.name, type: type === TYPE_A ? TYPE_A : TYPE_AAAA, ttl: server.ttl, address }));
    socket.send(buildReply(q, { rcode: RCODE_NOERROR, answers }), rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
  const { port } = socket.address() as AddressInfo;
  return Object.assign(server, {
    address: `127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => socket.close(() => r())),
  });
}
