import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import { DiscoveryRequestSchema } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { silentLogger } from '../util/log.js';
import {
  envoyThenWorkload,
  healthRequests,
  parseReadinessProbe,
  probeOnce,
  startWorkloadHealthChecker,
  type ProbeResult,
} from './workload-health.js';

describe('workload readiness probe', () => {
  it("fills in pilot-agent's defaults and refuses a probe without one method", () => {
    const p = parseReadinessProbe({ httpGet: { port: 8080 } }, 'readinessProbe');
    assert.deepEqual(p, {
      initialDelayMs: 0,
      timeoutMs: 1000,
      periodMs: 10_000,
      successThreshold: 1,
      failureThreshold: 1,
      method: { httpGet: { port: 8080 } },
    });
    assert.equal(parseReadinessProbe(undefined, 'x'), undefined);
    assert.throws(() => parseReadinessProbe({ periodSeconds: 5 }, 'readinessProbe'), /readinessProbe: needs exactly one of httpGet/);
    assert.throws(
      () => parseReadinessProbe({ tcpSocket: { port: 0 } }, 'readinessProbe'),
      /readinessProbe.tcpSocket.port: must be a port number/,
    );
    assert.throws(() => parseReadinessProbe({ exec: { command: [] } }, 'readinessProbe'), /exec.command is required/);
  });

  it('reports only transitions, once the thresholds agree', async () => {
    const script = [false, true, false, true, true, true, false, false, true];
    const reports: boolean[] = [];
    let i = 0;
    const done = new Promise<void>((resolve) => {
      const checker = startWorkloadHealthChecker(
        { ...parseReadinessProbe({ tcpSocket: { port: 1 }, successThreshold: 2, failureThreshold: 2 }, 'p')!, periodMs: 1 },
        '127.0.0.1',
        (r) => reports.push(r.healthy),
        silentLogger,
        (): Promise<ProbeResult> => {
          const healthy = script[i++];
          if (healthy === undefined) {
            checker.stop();
            resolve();
            return Promise.resolve({ healthy: true, message: '' });
          }
          return Promise.resolve({ healthy, message: healthy ? '' : 'down' });
        },
      );
    });
    await done;
    // f t f t t(→healthy) t f f(→unhealthy) t
    assert.deepEqual(reports, [true, false]);
  });

  it('probes a real HTTP server and says why it failed', async () => {
    let status = 200;
    const server = http.createServer((_req, res) => res.writeHead(status).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const p = parseReadinessProbe({ httpGet: { port, path: '/ready' } }, 'p')!;
      assert.deepEqual(await probeOnce(p, '127.0.0.1'), { healthy: true, message: '' });
      status = 503;
      const r = await probeOnce(p, '127.0.0.1');
      assert.equal(r.healthy, false);
      assert.equal(r.message, `HTTP probe of 127.0.0.1:${port} failed (status 503)`);
      status = 200;
      // pilot-agent's aggregate: an Envoy that is not ready makes the workload unhealthy whatever its app says.
      assert.deepEqual(await envoyThenWorkload({ notReadyReason: () => Promise.resolve('no LDS yet') }, p, '127.0.0.1'), {
        healthy: false,
        message: 'Envoy is not ready: no LDS yet',
      });
      assert.deepEqual(await envoyThenWorkload({ notReadyReason: () => Promise.resolve(undefined) }, p, '127.0.0.1'), {
        healthy: true,
        message: '',
      });
    } finally {
      server.close();
    }
  });

  it('encodes health as istio-agent does: HealthInformation, error_detail only when unhealthy', () => {
    const ok = fromBinary(DiscoveryRequestSchema, healthRequests({ healthy: true, message: '' }).sotw);
    assert.equal(ok.typeUrl, 'type.googleapis.com/istio.v1.HealthInformation');
    assert.equal(ok.errorDetail, undefined);
    const bad = fromBinary(DiscoveryRequestSchema, healthRequests({ healthy: false, message: 'refused' }).sotw);
    assert.deepEqual([bad.errorDetail?.code, bad.errorDetail?.message], [13, 'refused']);
  });
});
