/**
 * meshctl's tables against a running mesh with a real data plane: `meshpilot demo` (meshpilot, a
 * stock Envoy sidecar through the node agent, the bookinfo apps) and a real grpc-js-xds client in
 * this process. What istioctl users read there: proxy-status NAME as `<pod>.<namespace>`, CLUSTER
 * and VERSION filled (the control plane's cluster for a node naming none; the user agent where the
 * node sends no ISTIO_VERSION); the proxyless client's listener as a row; route rows that differ
 * by headers told apart; the bootstrap node and the Envoy version; the DestinationRule of gRPC
 * clusters.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { fetchProxyConfig, proxyStatus, renderProxyConfig } from '../../src/meshctl/proxy/index.js';
import { terminate } from '../support/cleanup.js';
import { answeredSeconds, startDemo, type DemoProcess } from '../support/demo-process.js';
import { envoySkipReason, ENVOY_VERSION } from '../support/envoy.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { callWhoami, closeXdsChannels, proxylessNode, useXdsBootstrap } from '../support/xds-client.js';

const skip = envoySkipReason();
const GRPC_VERSION = (createRequire(import.meta.url)('@grpc/grpc-js-xds/package.json') as { version: string }).version;

/** Rows as header → cell, cut at the header's column offsets (works with empty cells). */
function byColumn(text: string): Record<string, string>[] {
  const [header = '', ...lines] = text.trimEnd().split('\n');
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index }));
  return lines.map((l) => Object.fromEntries(starts.map((c, i) => [c.name, l.slice(c.at, starts[i + 1]?.at ?? l.length).trim()])));
}

describe('meshctl tables on the demo mesh (Envoy sidecar and proxyless gRPC)', { skip }, () => {
  const dir = tempDir();
  let demo: DemoProcess | undefined;
  const ENVOY = 'demo-client.default';
  const GRPC = 'grpc-client.default';
  const addr = (): string => demo?.grpcAddr ?? '';

  before(async () => {
    demo = await startDemo(dir.path);
    const d = demo;
    await waitFor(
      () => {
        if (d.child.exitCode !== null) throw new Error(`demo exited ${d.child.exitCode}\n${d.why()}`);
        return answeredSeconds(d) >= 1;
      },
      { description: 'the demo client answered through Envoy', timeoutMs: 90_000 },
    );
    // A proxyless client (no CLUSTER_ID, no ISTIO_VERSION in its node): one call makes it subscribe.
    useXdsBootstrap(d.grpcAddr, proxylessNode('grpc-client', 'default', '127.0.0.11'));
    await callWhoami('xds:///reviews.default.svc.cluster.local:9080', { deadlineMs: 3000 });
    await waitFor(async () => (await proxyStatus({ addresses: [d.grpcAddr] })).includes(GRPC), {
      description: 'the proxyless client in proxy-status',
      timeoutMs: 15_000,
    });
  });

  after(async () => {
    closeXdsChannels();
    if (demo) {
      demo.child.kill('SIGINT');
      await terminate(demo.child, 15_000);
    }
    await dir.remove();
  });

  it('proxy-status: NAME is <pod>.<namespace>; CLUSTER and VERSION are filled', async () => {
    const rows = byColumn(await proxyStatus({ addresses: [addr()] }));
    const byName = new Map(rows.map((r) => [r.NAME, r]));
    assert.deepEqual([...byName.keys()].sort(), [ENVOY, GRPC], JSON.stringify(rows));
    assert.deepEqual(byName.get(ENVOY), {
      NAME: ENVOY,
      CLUSTER: 'Kubernetes',
      ISTIOD: addr(),
      VERSION: `envoy/${ENVOY_VERSION}`,
      'SUBSCRIBED TYPES': byName.get(ENVOY)?.['SUBSCRIBED TYPES'],
    });
    assert.deepEqual(byName.get(GRPC), {
      NAME: GRPC,
      CLUSTER: 'Kubernetes',
      ISTIOD: addr(),
      VERSION: `gRPC Node Pure JS/${GRPC_VERSION}`,
      'SUBSCRIBED TYPES': byName.get(GRPC)?.['SUBSCRIBED TYPES'],
    });
    assert.match(byName.get(ENVOY)?.['SUBSCRIBED TYPES'] ?? '', /^\d+ \(CDS,LDS,EDS,RDS/);
  });

  it("proxy-config listener: the proxyless client's listener is a row under an aligned header", async () => {
    const text = renderProxyConfig('listener', await fetchProxyConfig({ address: addr() }, GRPC));
    const lines = text.trimEnd().split('\n');
    assert.equal(lines.length, 2, text);
    // istioctl's listener table pads by one space.
    assert.deepEqual(
      lines.map((l) => l.split(/ +/)),
      [
        ['ADDRESSES', 'PORT', 'MATCH', 'DESTINATION'],
        ['reviews.default.svc.cluster.local', '9080', 'ALL', 'Route:', 'outbound|9080||reviews.default.svc.cluster.local'],
      ],
      text,
    );
    // Columns line up: each header starts where its cells do.
    assert.equal(lines[0]?.indexOf('PORT'), lines[1]?.indexOf('9080'), text);
  });

  it('proxy-config route: no two rows alike; the header match is shown', async () => {
    for (const proxy of [ENVOY, GRPC]) {
      const text = renderProxyConfig('route', await fetchProxyConfig({ address: addr() }, proxy));
      const lines = text.trimEnd().split('\n').slice(1);
      assert.equal(new Set(lines).size, lines.length, `${proxy}: duplicate rows\n${text}`);
      const reviews = byColumn(text).filter((r) => r['VHOST NAME'] === 'reviews.default.svc.cluster.local:9080');
      assert.deepEqual(
        reviews.map((r) => [r.MATCH, r['VIRTUAL SERVICE']]),
        [
          ['/* [end-user=jason]', 'reviews.default'],
          ['/*', 'reviews.default'],
        ],
        `${proxy}\n${text}`,
      );
    }
  });

  it('proxy-config bootstrap and all: the node the proxy sent and its version', async () => {
    const envoy = await fetchProxyConfig({ address: addr() }, ENVOY);
    const boot = JSON.parse(renderProxyConfig('bootstrap', envoy)) as {
      bootstrap?: { node?: { id?: string; userAgentName?: string; metadata?: Record<string, unknown> } };
    };
    assert.equal(boot.bootstrap?.node?.id, 'sidecar~127.0.0.10~demo-client.default~default.svc.cluster.local');
    assert.equal(boot.bootstrap?.node?.userAgentName, 'envoy');
    assert.equal(boot.bootstrap?.node?.metadata?.NAMESPACE, 'default');
    assert.equal(renderProxyConfig('all', envoy).split('\n')[0], `Envoy Version: ${ENVOY_VERSION}`);
    const grpc = await fetchProxyConfig({ address: addr() }, GRPC);
    assert.equal(renderProxyConfig('all', grpc).split('\n')[0], `Client Version: gRPC Node Pure JS/${GRPC_VERSION}`);
  });

  it("proxy-config cluster: the DestinationRule of the proxyless client's subset clusters", async () => {
    const rows = byColumn(renderProxyConfig('cluster', await fetchProxyConfig({ address: addr() }, GRPC)));
    const reviews = rows.filter((r) => r['SERVICE FQDN'] === 'reviews.default.svc.cluster.local');
    assert.ok(reviews.length >= 1, JSON.stringify(rows));
    assert.deepEqual(
      reviews.map((r) => r['DESTINATION RULE']),
      reviews.map(() => 'reviews.default'),
      JSON.stringify(rows),
    );
  });
});
