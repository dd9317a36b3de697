import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, type LogFields } from '../util/log.js';
import { parseEnvoyRunOptions } from './envoy-options.js';
import { EnvoyProcess, envoyArgs, type EnvoyStart } from './envoy-process.js';

function capture(): { lines: LogFields[]; log: ReturnType<typeof createLogger> } {
  const lines: LogFields[] = [];
  return { lines, log: createLogger({ level: 'debug', sink: (l) => lines.push(JSON.parse(l) as LogFields) }) };
}

/** A fake Envoy: /bin/sh running `script`. */
function fake(
  script: string,
  o: { maxRestarts: number; intervalMs: number; stableAfterMs?: number },
): { envoy: EnvoyProcess; starts: EnvoyStart[]; lines: LogFields[] } {
  const { lines, log } = capture();
  const envoy = new EnvoyProcess({
    binaryPath: '/bin/sh',
    args: ['-c', script],
    maxRestarts: o.maxRestarts,
    restartInitialIntervalMs: o.intervalMs,
    ...(o.stableAfterMs !== undefined ? { stableAfterMs: o.stableAfterMs } : {}),
    stdio: 'ignore',
    log,
  });
  const starts: EnvoyStart[] = [];
  envoy.onStart((s) => starts.push(s));
  return { envoy, starts, lines };
}

describe('envoyArgs', () => {
  it("passes pilot-agent's flags: drain, hot restart off, log format and level, concurrency", () => {
    const run = parseEnvoyRunOptions({}, {}, undefined);
    const args = envoyArgs('/etc/istio/proxy/envoy-rev.json', run, '10.0.0.1');
    assert.deepEqual(args.slice(0, 13), [
      '-c',
      '/etc/istio/proxy/envoy-rev.json',
      '--drain-time-s',
      '45',
      '--drain-strategy',
      'immediate',
      '--local-address-ip-version',
      'v4',
      '--file-flush-interval-msec',
      '1000',
      '--disable-hot-restart',
      '--allow-unknown-static-fields',
      '--log-format',
    ]);
    assert.deepEqual(args.slice(14), ['-l', 'warning', '--component-log-level', 'misc:error', '--concurrency', '2']);
  });

  it('IPv6 pod → v6; level with component levels splits; concurrency 0 is left to Envoy', () => {
    const run = parseEnvoyRunOptions({ proxyLogLevel: 'debug,upstream:trace', concurrency: '0' }, {}, undefined);
    const args = envoyArgs('b.json', run, 'fd00::1');
    assert.equal(args[args.indexOf('--local-address-ip-version') + 1], 'v6');
    assert.deepEqual(args.slice(args.indexOf('-l')), ['-l', 'debug', '--component-log-level', 'upstream:trace']);
  });
});

describe('EnvoyProcess supervision', () => {
  it('restarts an Envoy that exits with doubling delays, then gives up with the reason', async () => {
    const { envoy, starts, lines } = fake('exit 3', { maxRestarts: 3, intervalMs: 20 });
    const t0 = Date.now();
    envoy.start();
    const err = await envoy.ended;
    const took = Date.now() - t0;
    assert.ok(err instanceof Error);
    assert.match(err.message, /exited with code 3; gave up after 3 restarts/);
    assert.equal(starts.length, 4, 'the first run and 3 restarts');
    assert.deepEqual(
      starts.map((s) => s.generation),
      [0, 1, 2, 3],
    );
    assert.equal(new Set(starts.map((s) => s.pid)).size, 4, 'a new process each time');
    assert.deepEqual(
      lines.filter((l) => l.msg === 'envoy exited unexpectedly: restarting').map((l) => l.delayMs),
      [20, 40, 80],
    );
    assert.ok(took >= 140, `backoff 20+40+80ms, took ${took}ms`);
    assert.equal(envoy.restarts, 3);
  });

  it('a run that lasted restores the budget: only a crash loop gives up', async () => {
    // Every run lasts ~150ms, more than stableAfterMs: each exit counts as the first.
    const { envoy, starts } = fake('sleep 0.15; exit 1', { maxRestarts: 1, intervalMs: 10, stableAfterMs: 100 });
    envoy.start();
    await new Promise((r) => setTimeout(r, 700));
    assert.ok(starts.length >= 3, `restarted ${starts.length - 1} times with a budget of 1`);
    await envoy.stop();
    assert.equal(await envoy.ended, undefined);
  });

  it('a binary that cannot run gives up at once, naming the path and the flag', async () => {
    const { lines, log } = capture();
    const envoy = new EnvoyProcess({
      binaryPath: '/nonexistent/envoy',
      args: [],
      maxRestarts: 5,
      restartInitialIntervalMs: 10,
      stdio: 'ignore',
      log,
    });
    envoy.start();
    const err = await envoy.ended;
    assert.match(String(err?.message), /cannot run Envoy \/nonexistent\/envoy: .*ENOENT.*--envoyBinary/);
    assert.equal(lines.filter((l) => l.msg === 'envoy exited unexpectedly: restarting').length, 0);
  });

  it('after stopRestarting() (shutdown) an exiting Envoy is not restarted', async () => {
    const { envoy, starts, lines } = fake('sleep 0.1; exit 2', { maxRestarts: 3, intervalMs: 10 });
    envoy.start();
    envoy.stopRestarting();
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(starts.length, 1);
    assert.ok(lines.some((l) => l.msg === 'envoy exited during shutdown: not restarting'));
    await envoy.stop();
  });

  it('stop() ends a running Envoy (SIGTERM) and any pending restart', async () => {
    const { envoy, starts } = fake('sleep 30', { maxRestarts: 3, intervalMs: 10 });
    envoy.start();
    while (starts.length === 0) await new Promise((r) => setTimeout(r, 10));
    const pid = envoy.pid!;
    await envoy.stop();
    assert.equal(await envoy.ended, undefined);
    assert.equal(envoy.pid, undefined);
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
    assert.equal(starts.length, 1, 'no restart after stop');
  });
});
