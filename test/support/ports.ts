import { createServer, type Server } from 'node:net';

function listenEphemeral(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen({ host, port: 0, exclusive: true }, () => resolve(srv));
  });
}

function portOf(srv: Server): number {
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('listening socket has no port');
  return addr.port;
}

function close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()));
}

/** A TCP port on `host` that was free a moment ago (the kernel picked it). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [p] = await freePorts(1, host);
  if (p === undefined) throw new Error('no port');
  return p;
}

/** `n` distinct free ports: all are held open together before release, so they cannot collide. */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) servers.push(await listenEphemeral(host));
    return servers.map(portOf);
  } finally {
    await Promise.all(servers.map(close));
  }
}
