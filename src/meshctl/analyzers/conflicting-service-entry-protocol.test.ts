import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflictingServiceEntryProtocolAnalyzer } from './conflicting-service-entry-protocol.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('conflicting-service-entry-protocol', n);
const D = 'testdata/meshctl/analyze/conflicting-service-entry-protocol';

test('IST0177 on each ServiceEntry giving a host and port another protocol (case-insensitive), at metadata.name', async () => {
  const text =
    'Multiple ServiceEntries (team-a/api-http, team-b/api-tls) define the same host "api.example.com" and port 443 with conflicting protocols (HTTPS, TLS).';
  assert.deepEqual(await analyzeLines(conflictingServiceEntryProtocolAnalyzer, [f('conflict.yaml')]), [
    `Warning [IST0177] (ServiceEntry team-a/api-http ${D}/conflict.yaml:4) ${text}`,
    `Warning [IST0177] (ServiceEntry team-b/api-tls ${D}/conflict.yaml:16) ${text}`,
  ]);
});

test('exportTo scopes: entries private to their namespaces never conflict; one exported to a namespace meets the mesh-wide one', async () => {
  const text =
    'Multiple ServiceEntries (infra/cache-tcp, team-a/cache-redis) define the same host "cache.example.com" and port 6379 with conflicting protocols (REDIS, TCP).';
  assert.deepEqual(await analyzeLines(conflictingServiceEntryProtocolAnalyzer, [f('scopes.yaml')]), [
    `Warning [IST0177] (ServiceEntry infra/cache-tcp ${D}/scopes.yaml:42) ${text}`,
    `Warning [IST0177] (ServiceEntry team-a/cache-redis ${D}/scopes.yaml:30) ${text}`,
  ]);
});

test('the ServiceEntries of other scenarios, each host/port with one protocol: nothing', async () => {
  assert.deepEqual(
    await analyzeLines(conflictingServiceEntryProtocolAnalyzer, [
      scenario('service-entry-addresses', 'ok.yaml'),
      scenario('unknown-destination-rule-host', 'service-entry.yaml'),
    ]),
    [],
  );
});
