import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../util/log.js';

export type Handler = (
  req: IncomingMessage,
  url: URL,
) => { status: number; body: unknown; contentType?: string } | Promise<{ status: number; body: unknown; contentType?: string }>;

/** A small JSON/text HTTP server for /ready and the debug endpoints. */
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
        const text = typeof r.body === 'string' ? r.body : JSON.stringify(r.body, null, 2) + '\n';
        res
          .writeHead(r.status, { 'content-type': r.contentType ?? (typeof r.body === 'string' ? 'text/plain' : 'application/json') })
          .end(text);
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
