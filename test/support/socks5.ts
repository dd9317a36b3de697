/**
 * One HTTP/1.1 GET through a SOCKS5 proxy (RFC 1928, no authentication, CONNECT to an IPv4
 * address): how tests send traffic into ztunnel's outbound path (its socks5 port,
 * UNSTABLE_ENABLE_SOCKS5) without a client binary. One fresh connection per request, so each
 * request is a new connection ztunnel routes and authorizes on its own.
 */
import net from 'node:net';

export interface Socks5Response {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** SOCKS5 reply codes (RFC 1928 §6) by value, for error messages. */
const REPLIES: Readonly<Record<number, string>> = {
  1: 'general failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/**
 * GET http://`ip`:`port``path` through the SOCKS5 proxy at `proxy` (`host:port`). Rejects with
 * the reason when the proxy refuses, the connection closes before a whole response, or nothing
 * completes within `timeoutMs`.
 */
export function socks5HttpGet(proxy: string, ip: string, port: number, path = '/', timeoutMs = 2000): Promise<Socks5Response> {
  const octets = ip.split('.').map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) throw new Error(`not an IPv4 address: ${ip}`);
  const i = proxy.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(proxy.slice(i + 1)), proxy.slice(0, i));
    let buf = Buffer.alloc(0);
    let stage: 'greeting' | 'connect' | 'http' = 'greeting';
    const fail = (why: string): void => {
      s.destroy();
      reject(new Error(`GET ${ip}:${port}${path} via socks5 ${proxy}: ${why}`));
    };
    s.setTimeout(timeoutMs, () => fail(`no response within ${timeoutMs} ms (stage ${stage})`));
    s.on('error', (err) => fail(err.message));
    s.on('connect', () => s.write(Buffer.from([5, 1, 0])));
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (stage === 'greeting' && buf.length >= 2) {
        if (buf[0] !== 5 || buf[1] !== 0) return fail(`greeting refused (${buf[0]}, ${buf[1]})`);
        buf = buf.subarray(2);
        stage = 'connect';
        s.write(Buffer.from([5, 1, 0, 1, ...octets, port >> 8, port & 0xff]));
      }
      // The reply: VER REP RSV ATYP BND.ADDR BND.PORT (an IPv4 or IPv6 bound address).
      if (stage === 'connect' && buf.length >= 4) {
        if (buf[1] !== 0) return fail(`CONNECT refused: ${REPLIES[buf[1]!] ?? `reply ${buf[1]}`}`);
        const len = 4 + (buf[3] === 4 ? 16 : 4) + 2;
        if (buf.length < len) return;
        buf = buf.subarray(len);
        stage = 'http';
        s.write(`GET ${path} HTTP/1.1\r\nHost: ${ip}:${port}\r\nConnection: close\r\n\r\n`);
      }
    });
    s.on('end', () => {
      if (stage !== 'http') return fail(`closed during ${stage}`);
      const text = buf.toString('utf8');
      const head = /^HTTP\/1\.[01] (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n/.exec(text);
      if (!head) return fail(buf.length === 0 ? 'closed without a response' : `not an HTTP response: ${text.slice(0, 80)}`);
      const headers: Record<string, string> = {};
      for (const line of head[2]!.split('\r\n')) {
        const c = line.indexOf(':');
        if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
      }
      s.destroy();
      const raw = text.slice(head[0].length);
      resolve({ status: Number(head[1]), headers, body: /chunked/i.test(headers['transfer-encoding'] ?? '') ? unchunk(raw) : raw });
    });
  });
}

/** The body of a `Transfer-Encoding: chunked` message (the response is read whole: it ends with the connection). */
function unchunk(raw: string): string {
  let out = '';
  let rest = raw;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (eol < 0 || Number.isNaN(size)) throw new Error(`bad chunk header: ${rest.slice(0, 40)}`);
    if (size === 0) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}
