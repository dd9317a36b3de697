import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../util/log.js';

export interface HandlerResult {
  status: number;
  body: unknown;
  contentType?: string;
  /** Further response headers (cache control, content security policy). */
  headers?: Readonly<Record<string, string>>;
  /**
   * A long-lived answer (server-sent events): called with the response after the head is written;
   * it writes and ends the response itself, and `body` is ignored.
   */
  stream?: (res: ServerResponse) => void;
}

export type Handler = (req: IncomingMessage, url: URL) => HandlerResult | Promise<HandlerResult>;

/** A small JSON/text HTTP server for /ready, the debug endpoints and the web console. */
export async function startHttpServer(
  host: string,
  port: number,
  routes: ReadonlyMap<string, Handler>,
  log: Logger,
  name: string,
): Promise<{ server: Server; address: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handler = routes.get(url.pathname);
    if (!handler) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no handler for ${url.pathname}\n`);
      return;
    }
    Promise.resolve(handler(req, url))
      .then((r) => {
        const contentType = r.contentType ?? (typeof r.body === 'string' ? 'text/plain' : 'application/json');
        if (r.stream) {
          res.writeHead(r.status, { 'content-type': contentType, ...r.headers });
          r.stream(res);
          return;
        }
        const text = typeof r.body === 'string' ? r.body : JSON.stringify(r.body, null, 2) + '\n';
        res.writeHead(r.status, { 'content-type': contentType, ...r.headers }).end(text);
      })
      .catch((err: unknown) => {
        log.error('http handler failed', { path: url.pathname, error: String(err) });
        res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  const address = `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  log.info(`${name} listening`, { addr: address });
  return { server, address };
}
