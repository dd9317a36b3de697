/**
 * Forwarding a query the name table does not answer to the resolvers of resolv.conf, over the
 * protocol it came in on (istio-agent's queryUpstream): one server after another in random order
 * (or all at once with DNS_FORWARD_PARALLEL, first answer wins), each with DNS_FORWARD_TIMEOUT.
 * The reply's bytes are passed back as they came; undefined when no server answered.
 */
import dgram from 'node:dgram';
import { isIP } from 'node:net';
import net from 'node:net';
import { HEADER_SIZE } from './wire.js';

export type DnsProtocol = 'udp' | 'tcp';

export interface UpstreamServer {
  readonly host: string;
  readonly port: number;
}

export interface UpstreamOptions {
  readonly servers: readonly UpstreamServer[];
  readonly timeoutMs: number;
  readonly parallel: boolean;
}

const idOf = (b: Uint8Array): number => (b[0]! << 8) | b[1]!;

/** One UDP exchange: a reply from that server with the query's id, or an error after the timeout. */
function exchangeUdp(query: Buffer, server: UpstreamServer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(isIP(server.host.split('%')[0] ?? '') === 6 ? 'udp6' : 'udp4');
    const done = (err: Error | undefined, reply?: Buffer): void => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${server.host}:${server.port} (udp) in ${timeoutMs} ms`)), timeoutMs);
    socket.on('error', (err) => done(err));
    socket.on('message', (msg, from) => {
      // Anything else on the socket (late replies, spoofed ones) is not this query's answer.
      if (msg.length < HEADER_SIZE || idOf(msg) !== idOf(query) || from.port !== server.port) return;
      done(undefined, msg);
    });
    socket.send(query, server.port, server.host, (err) => {
      if (err) done(err);
    });
  });
}

/** One TCP exchange: two-byte length, the query; the first length-prefixed reply. */
function exchangeTcp(query: Buffer, server: UpstreamServer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port });
    let buffered: Buffer = Buffer.alloc(0);
    let settled = false;
    const done = (err: Error | undefined, reply?: Buffer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(reply!);
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${server.host}:${server.port} (tcp) in ${timeoutMs} ms`)), timeoutMs);
    socket.on('error', (err) => done(err));
    socket.on('close', () => done(new Error(`${server.host}:${server.port} closed the connection without an answer`)));
    socket.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(query.length);
      socket.write(Buffer.concat([len, query]));
    });
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2) return;
      const len = buffered.readUInt16BE(0);
      if (buffered.length < 2 + len) return;
      const reply = buffered.subarray(2, 2 + len);
      if (reply.length < HEADER_SIZE || idOf(reply) !== idOf(query))
        done(new Error(`${server.host}:${server.port} answered another query`));
      else done(undefined, Buffer.from(reply));
    });
  });
}

function shuffle<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The first reply of the configured servers, or undefined with the reasons each failed. */
export async function forwardQuery(
  query: Buffer,
  protocol: DnsProtocol,
  o: UpstreamOptions,
): Promise<{ reply: Buffer } | { reply: undefined; errors: string[] }> {
  const exchange = protocol === 'udp' ? exchangeUdp : exchangeTcp;
  const errors: string[] = [];
  if (o.parallel && o.servers.length > 1) {
    try {
      return {
        reply: await Promise.any(
          o.servers.map((s) =>
            exchange(query, s, o.timeoutMs).catch((err: Error) => {
              errors.push(err.message);
              throw err;
            }),
          ),
        ),
      };
    } catch {
      return { reply: undefined, errors };
    }
  }
  for (const s of shuffle(o.servers)) {
    try {
      return { reply: await exchange(query, s, o.timeoutMs) };
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  if (o.servers.length === 0) errors.push('no nameserver in resolv.conf');
  return { reply: undefined, errors };
}
