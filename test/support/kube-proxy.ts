/**
 * A TCP relay in front of the API server, so a test can break a client's connections mid-stream
 * (`cut`: every open connection is destroyed and new ones are refused) and let it reconnect
 * (`resume`: the same port accepts again). TLS passes through untouched.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpRelay {
  /** `https://127.0.0.1:PORT` for a `https://` target. */
  readonly url: string;
  readonly port: number;
  /** Destroys every relayed connection and stops accepting (clients see ECONNREFUSED). */
  cut(): Promise<void>;
  /** Accepts again on the same port. */
  resume(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  const make = (): Server =>
    createServer((client) => {
      const upstream = createConnection({ host: to.hostname, port: Number(to.port) });
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  const listen = (srv: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      srv.once('error', reject);
      srv.listen({ host: '127.0.0.1', port }, () => {
        const addr = srv.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  const closeServer = (srv: Server | undefined): Promise<void> => new Promise((resolve) => (srv ? srv.close(() => resolve()) : resolve()));

  let server: Server | undefined = make();
  const port = await listen(server, 0);
  const cut = async (): Promise<void> => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    await closeServer(s);
  };
  return {
    url: `${to.protocol}//127.0.0.1:${port}`,
    port,
    cut,
    async resume() {
      if (server) return;
      server = make();
      await listen(server, port);
    },
    close: cut,
  };
}
