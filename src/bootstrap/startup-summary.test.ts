import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countObjects, dialable, startupSummary } from './startup-summary.js';

describe('startup summary', () => {
  const objectsByKind = countObjects(
    (kind) =>
      (
        ({ ServiceEntry: [1, 2, 3, 4], WorkloadEntry: [1, 2, 3, 4, 5], VirtualService: [1, 2], DestinationRule: [1] }) as Record<
          string,
          number[]
        >
      )[kind] ?? [],
  );

  it('counts every object by kind, not only some kinds', () => {
    const [config] = startupSummary({
      objectsByKind,
      errors: 0,
      grpcAddress: '127.0.0.1:15010',
      secureGrpcAddress: undefined,
      httpAddress: '127.0.0.1:8080',
      monitoringAddress: '127.0.0.1:15014',
      webhookAddress: undefined,
    });
    assert.equal(config?.msg, 'config loaded: 12 objects (ServiceEntry 4, WorkloadEntry 5, VirtualService 2, DestinationRule 1), 0 errors');
    assert.deepEqual(config?.fields, {
      objects: 12,
      errors: 0,
      kinds: { ServiceEntry: 4, WorkloadEntry: 5, VirtualService: 2, DestinationRule: 1 },
    });
  });

  it('names every listener, and how to connect (a wildcard bind as loopback)', () => {
    const lines = startupSummary({
      objectsByKind: new Map(),
      errors: 2,
      grpcAddress: '0.0.0.0:15010',
      secureGrpcAddress: '0.0.0.0:15012',
      httpAddress: '0.0.0.0:8080',
      monitoringAddress: '0.0.0.0:15014',
      webhookAddress: '0.0.0.0:15017',
    });
    assert.equal(lines[0]?.msg, 'config loaded: 0 objects, 2 errors (logged above as invalid config)');
    assert.equal(
      lines[1]?.msg,
      'listening: xDS gRPC 0.0.0.0:15010, xDS gRPC TLS + CA 0.0.0.0:15012, HTTP (ready, debug) 0.0.0.0:8080, monitoring 0.0.0.0:15014, webhooks HTTPS 0.0.0.0:15017',
    );
    assert.deepEqual(lines[1]?.fields, {
      grpc: '0.0.0.0:15010',
      secureGrpc: '0.0.0.0:15012',
      http: '0.0.0.0:8080',
      monitoring: '0.0.0.0:15014',
      webhooks: '0.0.0.0:15017',
    });
    assert.match(lines[2]!.msg, /meshctl proxy-status --xds-address 127\.0\.0\.1:15010/);
    assert.match(lines[2]!.msg, /meshpilot agent --xdsAddr 127\.0\.0\.1:15012/);
  });

  it('dialable', () => {
    assert.equal(dialable(':15010'), '127.0.0.1:15010');
    assert.equal(dialable('[::]:15010'), '[::1]:15010');
    assert.equal(dialable('10.0.0.1:15010'), '10.0.0.1:15010');
  });
});
