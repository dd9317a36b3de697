/**
 * The agent's DNS proxy (istio-agent's LocalDNSServer, pkg/dns/client): UDP and TCP on
 * DNS_PROXY_ADDR (localhost:15053), where the capture rules send the pod's DNS. A and AAAA
 * questions for mesh names are answered from the name table the control plane sends; everything
 * else goes to the resolv.conf servers and their reply comes back as it was. Until the first name
 * table arrives every query gets SERVFAIL (the resolver retries), as istio-agent answers. A packet
 * that is not a query is dropped or answered FORMERR; nothing a client sends can stop the proxy.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import type { NameTable } from '../../gen/dns/proto/nds_pb.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { LookupTable } from './lookup-table.js';
import type { ResolvConf } from './resolv-conf.js';
import { forwardQuery, type DnsProtocol } from './upstream.js';
import {
  buildReply,
  DnsFormatError,
  errorReply,
  fitReply,
  MAX_MESSAGE_SIZE,
  MIN_UDP_SIZE,
  parseQuery,
  RCODE_FORMERR,
  RCODE_NOERROR,
  RCODE_NOTIMP,
  RCODE_SERVFAIL,
  readHeader,
} from './wire.js';

export const DEFAULT_DNS_PROXY_ADDR = 'localhost:15053';
/** istio-agent's DefaultUpstreamTimeout. */
export const DEFAULT_FORWARD_TIMEOUT_MS = 5000;
/** A TCP client that sends nothing for this long is disconnected. */
const TCP_IDLE_MS = 10_000;

export interface DnsProxyOptions {
  /** `host:port`; `localhost` listens on 127.0.0.1 and, when resolv.conf has IPv6 servers, ::1 too. */
  readonly address: string;
  readonly resolvConf: ResolvConf;
  readonly proxyNamespace: string;
  /** `<namespace>.svc.<cluster domain>`. */
  readonly proxyDomain: string;
  readonly forwardTimeoutMs: number;
  readonly forwardParallel: boolean;
  readonly log: Logger;
}

export interface DnsProxy {
  /** Replaces the table answers come from. */
  updateNameTable(table: NameTable): void;
  /** The last name table received (for debugging), if any. */
  nameTable(): NameTable | undefined;
  /** A name table has arrived (istio-agent's readiness condition with DNS capture). */
  ready(): boolean;
  /** istio-agent's readiness condition with DNS capture: why not ready (no name table yet), or undefined. */
  notReadyReason(): string | undefined;
  /** The bound `host:port` of each socket (with port 0 asked, the port chosen). */
  readonly listening: readonly { readonly protocol: DnsProtocol; readonly address: string; readonly port: number }[];
  stop(): Promise<void>;
}

function splitHostPort(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(addr);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`DNS_PROXY_ADDR ${JSON.stringify(addr)} is not host:port (e.g. localhost:15053)`);
  return { host: m[1] ?? m[2] ?? '', port };
}

/** The UDP size a reply may have (istio-agent's ednsSize): 512 without EDNS or below it, 64 KiB over TCP. */
function maxReplySize(protocol: DnsProtocol, ednsUdpSize: number | undefined): number {
  if (protocol === 'tcp') return MAX_MESSAGE_SIZE;
  return Math.max(ednsUdpSize ?? 0, MIN_UDP_SIZE);
}

/** Answers queries; the sockets are separate (startDnsProxy), so tests can drive this directly. */
export class DnsResolver {
  private table: LookupTable | undefined;
  private raw: NameTable | undefined;

  constructor(private readonly o: Omit<DnsProxyOptions, 'address'>) {}

  updateNameTable(table: NameTable): void {
    this.table = LookupTable.build(table, {
      proxyNamespace: this.o.proxyNamespace,
      proxyDomain: this.o.proxyDomain,
      searchDomains: this.o.resolvConf.search,
    });
    this.raw = table;
    this.o.log.debug('DNS name table updated', { names: Object.keys(table.table).length, lookups: this.table.size });
  }

  nameTable(): NameTable | undefined {
    return this.raw;
  }

  ready(): boolean {
    return this.table !== undefined;
  }

  /** The reply to one packet, or undefined when it gets none (not a query, or unreadable header). */
  async answer(packet: Buffer, protocol: DnsProtocol): Promise<Buffer | undefined> {
    let header;
    try {
      header = readHeader(packet);
    } catch {
      return undefined;
    }
    // A response (QR) is never answered: two proxies must not bounce packets between them.
    if (header.response) return undefined;
    if (header.opcode !== 0) return errorReply(header, RCODE_NOTIMP);
    let query;
    try {
      query = parseQuery(packet);
    } catch (err) {
      if (!(err instanceof DnsFormatError)) throw err;
      this.o.log.debug('DNS query rejected', { protocol, error: err.message });
      return errorReply(header, RCODE_FORMERR);
    }
    const maxSize = maxReplySize(protocol, query.ednsUdpSize);
    const table = this.table;
    if (!table) return errorReply(header, RCODE_SERVFAIL, query.question);
    const hostname = `${query.question.name.toLowerCase()}.`;
    const hit = table.lookup(query.question.type, hostname);
    if (hit.found) return buildReply(query, { rcode: RCODE_NOERROR, authoritative: true, answers: hit.answers, maxSize });
    const upstream = await forwardQuery(packet, protocol, {
      servers: this.o.resolvConf.servers,
      timeoutMs: this.o.forwardTimeoutMs,
      parallel: this.o.forwardParallel,
    });
    if (!upstream.reply) {
      this.o.log.info('DNS upstream failed', { name: hostname, protocol, errors: upstream.errors });
      return errorReply(header, RCODE_SERVFAIL, query.question);
    }
    try {
      return fitReply(upstream.reply, maxSize);
    } catch {
      return errorReply(header, RCODE_SERVFAIL, query.question);
    }
  }
}

/** Serves one TCP connection: length-prefixed queries in, length-prefixed replies out, in any order. */
function serveTcp(socket: net.Socket, resolver: DnsResolver, log: Logger): void {
  let buffered: Buffer = Buffer.alloc(0);
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2) {
      const len = buffered.readUInt16BE(0);
      if (buffered.length < 2 + len) break;
      const packet = Buffer.from(buffered.subarray(2, 2 + len));
      buffered = buffered.subarray(2 + len);
      resolver.answer(packet, 'tcp').then(
        (reply) => {
          if (!reply || socket.destroyed) return;
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(reply.length);
          socket.write(Buffer.concat([prefix, reply]));
        },
        (err: unknown) => log.warn('DNS query failed', { protocol: 'tcp', error: errorMessage(err) }),
      );
    }
  });
}

export async function startDnsProxy(o: DnsProxyOptions): Promise<DnsProxy> {
  const resolver = new DnsResolver(o);
  const { host, port } = splitHostPort(o.address);
  let hosts = [host];
  if (host === 'localhost') {
    const v6 = o.resolvConf.servers.some((s) => net.isIP(s.host.split('%')[0] ?? '') === 6);
    const v4 = o.resolvConf.servers.some((s) => net.isIP(s.host) === 4);
    hosts = [...(v4 || !v6 ? ['127.0.0.1'] : []), ...(v6 ? ['::1'] : [])];
  }
  const udp: dgram.Socket[] = [];
  const tcp: net.Server[] = [];
  const listening: { protocol: DnsProtocol; address: string; port: number }[] = [];
  const close = async (): Promise<void> => {
    for (const s of udp) s.close();
    await Promise.all(tcp.map((s) => new Promise<void>((r) => s.close(() => r()))));
  };
  try {
    for (const h of hosts) {
      const family = net.isIP(h) === 6 ? 'udp6' : 'udp4';
      const socket = dgram.createSocket(family);
      udp.push(socket);
      socket.on('message', (msg, rinfo) => {
        resolver.answer(msg, 'udp').then(
          (reply) => {
            if (reply) socket.send(reply, rinfo.port, rinfo.address);
          },
          (err: unknown) => o.log.warn('DNS query failed', { protocol: 'udp', error: errorMessage(err) }),
        );
      });
      socket.on('error', (err) => o.log.warn('DNS UDP socket error', { error: err.message }));
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, h, () => {
          socket.off('error', reject);
          resolve();
        });
      });
      const bound = socket.address();
      listening.push({ protocol: 'udp', address: bound.address, port: bound.port });
      // The TCP server takes the UDP socket's port, so `:0` gives one port for both.
      const server = net.createServer((c) => serveTcp(c, resolver, o.log));
      tcp.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(bound.port, h, () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening.push({ protocol: 'tcp', address: h, port: bound.port });
    }
  } catch (err) {
    await close();
    throw new Error(`DNS proxy cannot listen on ${o.address}: ${errorMessage(err)}`, { cause: err });
  }
  o.log.info('DNS proxy listening', {
    addresses: listening.map((l) => `${l.protocol}/${l.address}:${l.port}`),
    upstream: o.resolvConf.servers.map((s) => `${s.host}:${s.port}`),
    search: o.resolvConf.search,
  });
  return {
    updateNameTable: (t) => resolver.updateNameTable(t),
    nameTable: () => resolver.nameTable(),
    ready: () => resolver.ready(),
    notReadyReason: () => (resolver.ready() ? undefined : 'DNS capture is on and the DNS name table has not arrived yet'),
    listening,
    stop: close,
  };
}
