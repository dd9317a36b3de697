import { createServer, type Server } from 'node:net';

/**
 * Ports are drawn below the kernel's ephemeral range (32768–60999 by default). A port the kernel
 * hands out for `listen(0)` is also one it hands out as the source port of any outgoing
 * connection, so between our release and the real owner's bind (Envoy seconds later) another
 * process's connection could take it and the bind fails. Below the range only another test's
 * random draw can collide, and the draw is checked by binding.
 */
const LOW = 20000;
const HIGH = 32767;
const ATTEMPTS = 200;

function listenOn(host: string, port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen({ host, port, exclusive: true }, () => resolve(srv));
  });
}

function close(srv: Server): Promise<void> {
  return new Promise((resolve) => srv.close(() => resolve()));
}

/** A TCP port on `host` that was free a moment ago. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [p] = await freePorts(1, host);
  if (p === undefined) throw new Error('no port');
  return p;
}

/** `n` distinct free ports: all are held open together before release, so they cannot collide. */
export async function freePorts(n: number, host = '127.0.0.1'): Promise<number[]> {
  const held = new Map<number, Server>();
  try {
    for (let attempt = 0; held.size < n; attempt++) {
      if (attempt >= ATTEMPTS) throw new Error(`no ${n} free ports in ${LOW}-${HIGH} on ${host}`);
      const port = LOW + Math.floor(Math.random() * (HIGH - LOW + 1));
      if (held.has(port)) continue;
      const srv = await listenOn(host, port);
      if (srv) held.set(port, srv);
    }
    return [...held.keys()];
  } finally {
    await Promise.all([...held.values()].map(close));
  }
}
