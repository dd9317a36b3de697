import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workloadsOf } from './apps.js';
import { ControlPlaneEvents } from './events.js';
import { bundledExample, parseDemoOptions } from './run.js';
import { plainLine, table } from './screen.js';

describe('meshpilot demo pieces', () => {
  it("the bundled example names six loopback workloads, with their ports' protocols", () => {
    const ws = workloadsOf(bundledExample());
    assert.deepEqual(ws.map((w) => `${w.service} ${w.version} ${w.address}:${w.port} ${w.protocol}`).sort(), [
      'details v1 127.0.0.1:19084 GRPC',
      'productpage v1 127.0.0.1:19080 HTTP',
      'ratings v1 127.0.0.1:19085 GRPC',
      'reviews v1 127.0.0.1:19081 GRPC',
      'reviews v2 127.0.0.1:19082 GRPC',
      'reviews v3 127.0.0.1:19083 GRPC',
    ]);
  });

  it('options: defaults, durations, and refusals', () => {
    const d = parseDemoOptions([]);
    assert.deepEqual(
      [d.configDir, d.target, d.durationMs, d.plain, d.rps, d.proxyless, d.grpcAddr],
      [bundledExample(), 'reviews.default.svc.cluster.local:9080', 0, false, 50, false, '127.0.0.1:15010'],
    );
    assert.deepEqual(
      ['10s', '500ms', '2m', '3'].map((x) => parseDemoOptions(['--duration', x]).durationMs),
      [10_000, 500, 120_000, 3000],
    );
    assert.throws(() => parseDemoOptions(['--duration', 'soon']), /--duration: "soon" is not a duration/);
    assert.throws(() => parseDemoOptions(['--rps', '0']), /--rps/);
    assert.throws(() => parseDemoOptions(['--configDir', '/nonexistent/x']), /does not exist/);
    assert.throws(() => parseDemoOptions(['--bogus']), /bogus/);
  });

  it('one plain line a second; the screen keeps versions seen before at 0', () => {
    const seen = new Set<string>();
    assert.equal(
      plainLine(
        1,
        {
          counts: new Map([
            ['reviews v1', 40],
            ['reviews v3', 10],
          ]),
          errors: 0,
        },
        seen,
      ),
      't=1s reviews v1=40 reviews v3=10 errors=0',
    );
    const screen = table(['header'], { counts: new Map([['reviews v2', 50]]), errors: 1, lastError: 'deadline exceeded' }, seen);
    assert.ok(screen.startsWith('\x1b[H\x1b[Jheader\n'));
    assert.match(screen, /answers in the last second \(50 ok, 1 failed\)/);
    assert.match(screen, /reviews v1 +·{30} +0 +0%/);
    assert.match(screen, /reviews v2 +█{30} +50 +100%/);
    assert.match(screen, /last error: deadline exceeded/);
  });

  it("meshpilot's log lines: the last change and its time to the proxies; a config error until resolved", () => {
    const notices: string[] = [];
    const e = new ControlPlaneEvents((n) => notices.push(n));
    e.line('not json');
    e.line(JSON.stringify({ level: 'info', scope: 'ads', msg: 'push', configs: ['VirtualService/default/reviews'], proxies: 1 }));
    e.line(JSON.stringify({ level: 'info', scope: 'propagation', msg: 'config change converged', proxies: 1, acked: 1, ms: 151.7 }));
    assert.deepEqual(e.current(), { lastChange: 'VirtualService/default/reviews: applied, 1 of 1 proxies acknowledged in 152 ms' });
    e.line(
      JSON.stringify({
        level: 'warn',
        scope: 'config',
        msg: 'invalid config: traffic.yaml:17 VirtualService default/reviews spec.http[1].route[0].weight: expected number',
      }),
    );
    assert.match(e.current().problem ?? '', /^invalid config: traffic\.yaml:17 .* \(the last good version keeps serving\)$/);
    e.line(JSON.stringify({ level: 'info', scope: 'config', msg: 'config errors resolved', resolved: 1, remaining: 0 }));
    assert.equal(e.current().problem, undefined);
    assert.equal(notices.length, 3);
  });
});
