/* global process, setTimeout */
/**
 * Runs inside a ztunnel's network namespace (`ip netns exec NS node ztunnel-netns-relay.mjs`): it
 * bridges TCP ports across the namespace boundary through unix sockets (which every namespace
 * reaches through the file system), then starts ztunnel as its own child, so ztunnel dies with it.
 *
 * ZTUNNEL_RELAY_SPEC (JSON):
 * - `toHost`: `[{ port, unix }]` — listen on 127.0.0.1:port in the namespace, forward each
 *   connection to the unix socket `unix` (served by the test process: meshpilot's secure port);
 * - `fromHost`: `[{ unix, port }]` — listen on the unix socket `unix`, forward each connection to
 *   127.0.0.1:port in the namespace (ztunnel's admin, readiness, inbound … ports);
 * - `bin`, `args`, `cwd`, `env`: the ztunnel command (env is its whole environment); `graceMs`.
 *
 * ztunnel's stdout and stderr are inherited; this script's own lines start with `ztunnel-relay:`.
 * SIGTERM (or the parent watchdog, when the test process goes away) is passed on to ztunnel, and
 * SIGKILL `graceMs` (default 3000) later if it is still running; the relay exits with ztunnel's code
 * once it has exited, and SIGKILLs it if it must exit first.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import net from 'node:net';

const say = (msg) => process.stderr.write(`ztunnel-relay: ${msg}\n`);
const spec = JSON.parse(process.env.ZTUNNEL_RELAY_SPEC ?? '{}');

function bridge(a, b) {
  a.pipe(b);
  b.pipe(a);
  for (const [x, y] of [
    [a, b],
    [b, a],
  ]) {
    x.on('error', () => y.destroy());
    x.on('close', () => y.destroy());
  }
}

const servers = [];
function listen(server, ...where) {
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(...where, () => resolve());
  });
}

await Promise.all([
  ...(spec.toHost ?? []).map((t) =>
    listen(
      net.createServer((c) => bridge(c, net.connect(t.unix))),
      t.port,
      '127.0.0.1',
    ),
  ),
  ...(spec.fromHost ?? []).map((f) => {
    rmSync(f.unix, { force: true });
    return listen(
      net.createServer((c) => bridge(c, net.connect(f.port, '127.0.0.1'))),
      f.unix,
    );
  }),
]).catch((err) => {
  say(`cannot listen: ${err.message}`);
  process.exit(2);
});

const child = spawn(spec.bin, spec.args ?? [], { cwd: spec.cwd, env: spec.env, stdio: ['ignore', 'inherit', 'inherit'] });
child.on('error', (err) => {
  say(`cannot start ${spec.bin}: ${err.message}`);
  process.exit(2);
});
say(`started pid ${child.pid}`);
process.on('exit', () => child.kill('SIGKILL'));
// ztunnel does not always exit on SIGTERM (before its first xDS sync it waits for tasks that never started).
for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => {
    child.kill('SIGTERM');
    setTimeout(() => {
      say(`ztunnel still running ${spec.graceMs ?? 3000} ms after SIGTERM: SIGKILL`);
      child.kill('SIGKILL');
    }, spec.graceMs ?? 3000).unref();
  });
child.on('exit', (code, signal) => {
  for (const s of servers) s.close();
  say(`ztunnel exited (code ${code}, signal ${signal})`);
  process.exit(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15));
});
