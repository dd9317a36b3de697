/**
 * TCP services through real Envoy sidecars (test/support/envoy-mesh): a ServiceEntry port of
 * protocol TCP gets tcp_proxy filter chains on both sides instead of HTTP routes, so the bytes
 * (here HTTP, which the echo app answers) pass untouched — no x-request-id, no XFCC — while the
 * sidecars still talk mTLS, split connections by weight and enforce network RBAC. Every request
 * opens its own connection: TCP routing decides per connection.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { netnsSkipReason } from '../support/cni/netns.js';
import { envoySkipReason } from '../support/envoy.js';
import { NS, OTHER_NS, WORKLOADS, host, istio, showTally as show, useEnvoyMesh, versionSubsets } from '../support/envoy-mesh/fixture.js';
import { TCP_APP_PORT, type EnvoyMesh } from '../support/envoy-mesh/mesh.js';
import type { Tally } from '../support/envoy-mesh/netns-apps.js';
import { waitFor } from '../support/wait.js';

const skip = netnsSkipReason() ?? envoySkipReason();
let mesh: EnvoyMesh;

const count = (t: Tally, key: string): number => t.by[key] ?? 0;
const onEcho = { matchLabels: { app: 'echo' } };
const tcpUrl = (service: string): string => mesh.url(service, NS);

/** Sum of the echo pods' Envoy counters matching `re`. */
async function echoStat(re: RegExp): Promise<number> {
  let sum = 0;
  for (const pod of ['echo-v1', 'echo-v2']) for (const v of (await mesh.stats(pod, re)).values()) sum += v;
  return sum;
}

describe('TCP services through real Envoy sidecars', { skip }, () => {
  const started = useEnvoyMesh();
  before(() => {
    mesh = started();
  });

  it('bytes pass through tcp_proxy untouched, over mTLS between the sidecars', async () => {
    const handshakes = await echoStat(/^listener\..*\.ssl\.handshake$/);
    const t = await mesh.until('sleep', { url: tcpUrl('tcp'), n: 20, newConnections: true }, (x) => x.statuses['200'] === 20);
    assert.ok(count(t, 'echo-v1') > 0 && count(t, 'echo-v2') > 0, `connections to both pods: ${show(t)}`);
    const seen = JSON.parse(t.samples[0]!.body) as { port: number; headers: Record<string, string> };
    assert.equal(seen.port, TCP_APP_PORT);
    assert.deepEqual(
      [seen.headers['x-request-id'], seen.headers['x-forwarded-client-cert']],
      [undefined, undefined],
      'no HTTP filter touched the request',
    );
    assert.ok((await echoStat(/^listener\..*\.ssl\.handshake$/)) - handshakes >= 20, 'one TLS handshake per connection on the server side');
  });

  it('a TCP route splits connections 75/25 between subsets (±7.5 % over 400 connections)', async (c) => {
    await mesh.apply('tcp-split.yaml', [
      versionSubsets('tcp-split'),
      istio('VirtualService', 'tcp-split', {
        hosts: [host('tcp-split')],
        tcp: [
          {
            match: [{ port: TCP_APP_PORT }],
            route: [
              { destination: { host: host('tcp-split'), subset: 'v1' }, weight: 75 },
              { destination: { host: host('tcp-split'), subset: 'v2' }, weight: 25 },
            ],
          },
        ],
      }),
    ]);
    await mesh.untilConfig(['sleep'], 'dynamic_listeners', (d) => d.includes(`outbound|${TCP_APP_PORT}|v2|${host('tcp-split')}`));
    for (const subset of ['v1', 'v2']) {
      await waitFor(async () => (await mesh.cluster('sleep', `outbound|${TCP_APP_PORT}|${subset}|${host('tcp-split')}`)) !== undefined, {
        timeoutMs: 30_000,
        description: `${subset} cluster`,
      });
    }
    const t = await mesh.pod('sleep').client.run({ url: tcpUrl('tcp-split'), n: 400, concurrency: 8, newConnections: true });
    assert.equal(t.statuses['200'], 400, show(t));
    const v1 = count(t, 'echo-v1') / 4;
    assert.ok(Math.abs(v1 - 75) <= 7.5, `v1 got ${v1} % (${show(t)})`);
    c.diagnostic(`400 connections: ${JSON.stringify(t.by)} in ${t.elapsedMs} ms`);
  });

  it('network RBAC: DENY the sleep principal on the TCP port closes its connections; another identity and HTTP still pass', async () => {
    await mesh.apply('tcp-authz.yaml', [
      istio('AuthorizationPolicy', 'tcp-deny', {
        selector: onEcho,
        action: 'DENY',
        rules: [
          {
            from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/sleep`] } }],
            to: [{ operation: { ports: [String(TCP_APP_PORT)] } }],
          },
        ],
      }),
    ]);
    await mesh.untilConfig(['echo-v1', 'echo-v2'], 'dynamic_listeners', (d) => d.includes('policy[tcp-deny]'));
    const denied = await echoStat(/tcp\..*rbac\.denied$/);
    const t = await mesh.pod('sleep').client.run({ url: tcpUrl('tcp-authz'), n: 20, newConnections: true });
    assert.equal(t.statuses['200'], undefined, show(t));
    assert.equal(Object.values(t.errors).reduce((a, b) => a + b, 0) + (t.statuses['503'] ?? 0), 20, `every connection refused: ${show(t)}`);
    assert.equal((await echoStat(/tcp\..*rbac\.denied$/)) - denied, 20, 'the echo sidecars denied 20 connections');
    const other = await mesh.pod('mirror').client.run({ url: tcpUrl('tcp-authz'), n: 10, newConnections: true });
    assert.deepEqual(other.statuses, { 200: 10 }, `ns/${OTHER_NS}/sa/mirror passes: ${show(other)}`);
    const http = await mesh.pod('sleep').client.run({ url: mesh.url('echo', NS), n: 10 });
    assert.deepEqual(http.statuses, { 200: 10 }, `the HTTP port is not covered: ${show(http)}`);
    await mesh.apply('tcp-authz.yaml', undefined);
  });

  it('STRICT refuses a plaintext TCP client; PERMISSIVE lets it through', async () => {
    const echo = `http://${WORKLOADS.find((w) => w.name === 'echo-v1')!.ip}:${TCP_APP_PORT}/`;
    const permissive = await mesh.until('plain', { url: echo, n: 5, newConnections: true }, (x) => x.statuses['200'] === 5);
    assert.equal(count(permissive, 'echo-v1'), 5);
    await mesh.apply('tcp-strict.yaml', [istio('PeerAuthentication', 'echo', { selector: onEcho, mtls: { mode: 'STRICT' } })]);
    const strict = await mesh.until(
      'plain',
      { url: echo, n: 5, newConnections: true },
      (x) => x.statuses['200'] === undefined && x.n === 5,
    );
    assert.equal(
      Object.values(strict.errors).reduce((a, b) => a + b, 0),
      5,
      show(strict),
    );
    const meshed = await mesh.pod('sleep').client.run({ url: tcpUrl('tcp'), n: 10, newConnections: true });
    assert.deepEqual(meshed.statuses, { 200: 10 }, show(meshed));
    await mesh.apply('tcp-strict.yaml', undefined);
  });
});
