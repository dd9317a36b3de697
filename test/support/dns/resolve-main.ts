/**
 * `node --import tsx resolve-main.ts '<json>'`: what an application in the pod sees. JSON:
 * { lookups: [name…], queries: [{ server, port, name, type, protocol }…] }. Lookups go through
 * getaddrinfo (the pod's resolv.conf: its nameserver, search list and ndots), raw queries straight
 * to a server. Prints one JSON object: { lookups: { name: addresses | error }, queries: [ answers | error ] }.
 */
import { lookup } from 'node:dns/promises';
import { buildQuery, readAnswers } from '../../../src/agent/dns/wire.js';
import { queryDns } from './upstream-server.js';

interface Spec {
  lookups?: string[];
  queries?: { server: string; port: number; name: string; type: number; protocol: 'udp' | 'tcp' }[];
}
const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const out: { lookups: Record<string, string[] | string>; queries: unknown[] } = { lookups: {}, queries: [] };
for (const name of spec.lookups ?? []) {
  try {
    out.lookups[name] = (await lookup(name, { all: true, family: 4 })).map((a) => a.address).sort();
  } catch (err) {
    out.lookups[name] = `error: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
}
let id = 100;
for (const q of spec.queries ?? []) {
  try {
    const reply = readAnswers(await queryDns({ host: q.server, port: q.port }, buildQuery(id++, q.name, q.type), q.protocol));
    out.queries.push({ rcode: reply.header.rcode, authoritative: reply.header.authoritative, answers: reply.answers });
  } catch (err) {
    out.queries.push(`error: ${String(err)}`);
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
