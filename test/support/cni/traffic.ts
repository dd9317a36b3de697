import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { trackChild } from '../cleanup.js';
import type { Netns } from './netns.js';

/**
 * Real traffic for the capture tests. Listeners are a small Python program because the point is
 * to read the connection's original destination, which only getsockopt(SO_ORIGINAL_DST) (TCP,
 * from REDIRECT's conntrack entry) gives and Node cannot call; Python's socket module can, and
 * Debian's python3 is on every machine of this project (apt: python3).
 * Clients are plain Node one-liners, so a client process's uid is simply the one it runs as.
 */

const LISTENER_PY = String.raw`
import json, socket, struct, sys, threading
SO_ORIGINAL_DST = 80            # linux/netfilter_ipv4.h; the same number for IP6T_SO_ORIGINAL_DST
out_lock = threading.Lock()
def emit(rec):
    with out_lock:
        sys.stdout.write(json.dumps(rec) + "\n"); sys.stdout.flush()
def fmt(addr):
    return ("[%s]:%d" if ":" in addr[0] else "%s:%d") % (addr[0], addr[1])
def orig_dst(conn, v6):
    try:
        if v6:
            raw = conn.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
            port = struct.unpack("!H", raw[2:4])[0]
            return fmt((socket.inet_ntop(socket.AF_INET6, raw[8:24]), port))
        raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        port = struct.unpack("!H", raw[2:4])[0]
        return fmt((socket.inet_ntoa(raw[4:8]), port))
    except OSError as e:
        return "error:%d" % e.errno
def serve_tcp(tag, s, v6):
    while True:
        c, peer = s.accept()
        emit({"tag": tag, "proto": "tcp", "peer": fmt(peer), "local": fmt(c.getsockname()), "origDst": orig_dst(c, v6)})
        try:
            c.sendall((tag + "\n").encode())
        finally:
            c.close()
def serve_udp(tag, s):
    # REDIRECT leaves no original destination a UDP socket can read: the client sees it instead,
    # as the source of the reply (conntrack reverses the NAT).
    while True:
        data, peer = s.recvfrom(512)
        emit({"tag": tag, "proto": "udp", "peer": fmt(peer), "local": fmt(s.getsockname()), "origDst": None})
        s.sendto((tag + "\n").encode(), peer)
for spec in sys.argv[1:]:
    proto, host, port, tag = spec.split(",")
    v6 = ":" in host
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if v6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((host, int(port)))
    if proto == "tcp":
        s.listen(64)
        threading.Thread(target=serve_tcp, args=(tag, s, v6), daemon=True).start()
    else:
        threading.Thread(target=serve_udp, args=(tag, s), daemon=True).start()
emit({"ready": True})
sys.stdin.read()                 # exits when the test closes stdin (or dies)
`;

/** Debian's interpreter first: it must be runnable by the uid-1337 "proxy" too (not one under /root). */
export function findPython(): string | undefined {
  return ['/usr/bin/python3', '/usr/local/bin/python3'].find((p) => existsSync(p));
}

export interface Accepted {
  readonly tag: string;
  readonly proto: 'tcp' | 'udp';
  readonly peer: string;
  readonly local: string;
  readonly origDst: string | null;
}

export interface Listeners {
  /** Every connection or datagram seen so far, in order. */
  readonly seen: Accepted[];
  stop(): Promise<void>;
}

/** Drops privileges with setpriv, as the proxy container (uid/gid 1337) runs. */
function asUser(uid: number | undefined, cmd: string[]): string[] {
  return uid === undefined ? cmd : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', ...cmd];
}

/** Starts listeners `proto,host,port,tag` inside `ns`, resolving once all are bound. */
export async function startListeners(ns: Netns, specs: readonly string[], uid?: number): Promise<Listeners> {
  const python = findPython();
  if (!python) throw new Error('python3 is required for the capture tests (apt-get install -y python3)');
  const child: ChildProcess = spawn('ip', ['netns', 'exec', ns.name, ...asUser(uid, [python, '-c', LISTENER_PY, ...specs])], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackChild(child);
  const seen: Accepted[] = [];
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      const rec = JSON.parse(line) as Accepted & { ready?: boolean };
      if (rec.ready) resolve();
      else seen.push(rec);
    });
    child.once('exit', (code) => reject(new Error(`listeners in ${ns.name} exited (${code}): ${stderr}`)));
  });
  return {
    seen,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin?.end();
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }),
  };
}

const TCP_CLIENT = `
const [host, port] = process.argv.slice(1);
const s = require('net').connect({ host, port: Number(port), timeout: 3000 });
let got = '';
s.setEncoding('utf8').on('data', (d) => (got += d));
s.on('end', () => { process.stdout.write(got.trim()); process.exit(0); });
s.on('timeout', () => { process.stdout.write('timeout'); process.exit(2); });
s.on('error', (e) => { process.stdout.write(e.code || String(e)); process.exit(1); });`;

const UDP_CLIENT = `
const [host, port] = process.argv.slice(1);
const s = require('dgram').createSocket(host.includes(':') ? 'udp6' : 'udp4');
const t = setTimeout(() => { process.stdout.write('timeout'); process.exit(2); }, 3000);
s.on('message', (m, r) => { clearTimeout(t); process.stdout.write(m.toString().trim() + ' from ' + r.address + ':' + r.port); process.exit(0); });
s.send('q', Number(port), host);`;

function runNode(ns: Netns, script: string, host: string, port: number, uid?: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', ns.name, ...asUser(uid, [process.execPath, '-e', script, host, String(port)])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.once('exit', () => resolve(out.trim() || `no output: ${err.trim()}`));
  });
}

/** Connects from inside `ns` and returns what answered: the listener's tag, or the error code. */
export function tcpConnect(ns: Netns, host: string, port: number, uid?: number): Promise<string> {
  return runNode(ns, TCP_CLIENT, host, port, uid);
}

/** Sends one datagram from inside `ns`: `TAG from ADDR:PORT` of the reply, or the error. */
export function udpQuery(ns: Netns, host: string, port: number, uid?: number): Promise<string> {
  return runNode(ns, UDP_CLIENT, host, port, uid);
}
