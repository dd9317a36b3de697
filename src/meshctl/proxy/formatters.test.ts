/**
 * The proxy-config tables for the bookinfo scenario's generated config, against golden text files
 * (testdata/meshctl/proxy-config/<proxy>.<kind>.txt; UPDATE_GOLDEN=1 rewrites them), plus checks
 * that every row comes from a resource the proxy would receive.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { generateBookinfo } from '../../../test/scenarios/bookinfo-fixture.js';
import { REPO_ROOT } from '../../../test/support/paths.js';
import type { GeneratedConfig } from '../../../test/support/scenario.js';
import { formatClusters } from './cluster-format.js';
import { formatEndpoints, formatEndpointsSummary } from './endpoint-format.js';
import { formatListeners } from './listener-format.js';
import { formatRoutes } from './route-format.js';
import { formatSecrets } from './secret-format.js';

const GOLDEN_DIR = join(REPO_ROOT, 'testdata/meshctl/proxy-config');
const NOW = new Date('2027-01-01T00:00:00Z');

function assertGoldenText(name: string, text: string): void {
  const file = join(GOLDEN_DIR, name);
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(GOLDEN_DIR, { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) assert.fail(`golden file ${file} is missing: run with UPDATE_GOLDEN=1 to create it, then review it`);
  assert.equal(text, readFileSync(file, 'utf8'), `${file} differs (UPDATE_GOLDEN=1 rewrites it; review the diff)`);
}

/** Data rows of a table (header dropped), each split on runs of 2+ spaces. */
function rows(text: string): string[][] {
  return text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => l.trimEnd().split(/ {2,}/));
}

let config: Map<string, GeneratedConfig>;
const proxy = (name: string): GeneratedConfig => {
  const c = config.get(name);
  assert.ok(c, name);
  return c;
};

describe('proxy-config tables (bookinfo)', () => {
  before(async () => {
    config = await generateBookinfo();
  });

  for (const name of ['productpage', 'reviews-v1', 'ingress-gateway']) {
    it(`${name}: cluster, listener, route, endpoint tables match the golden files`, () => {
      const c = proxy(name);
      assertGoldenText(`${name}.cluster.txt`, formatClusters(c.clusters));
      assertGoldenText(`${name}.listener.txt`, formatListeners(c.listeners));
      assertGoldenText(`${name}.route.txt`, formatRoutes(c.routes));
      assertGoldenText(`${name}.endpoint.txt`, formatEndpoints(c.endpoints));
    });
  }

  it('the ingress gateway secret table reads its credential certificate', () => {
    const c = proxy('ingress-gateway');
    assert.ok(c.secrets.length > 0);
    const text = formatSecrets(
      c.secrets.map((secret) => ({ secret, state: 'ACTIVE' as const })),
      NOW,
    );
    assertGoldenText('ingress-gateway.secret.txt', text);
    assert.equal(
      text.split('\n')[0],
      'RESOURCE NAME                  TYPE     STATUS     VALID CERT     SERIAL NUMBER                                NOT AFTER                NOT BEFORE',
    );
    const [row] = rows(text);
    assert.deepEqual(row?.slice(0, 4), ['kubernetes://bookinfo-cert', 'CA', 'ACTIVE', 'true']);
    // A clock before NOT BEFORE makes the same certificate invalid.
    const early = rows(
      formatSecrets(
        c.secrets.map((secret) => ({ secret, state: 'ACTIVE' as const })),
        new Date('2000-01-01T00:00:00Z'),
      ),
    );
    assert.equal(early[0]?.[3], 'false');
    assert.equal(formatSecrets([], NOW), 'No active or warming secrets found.\n');
  });

  it('productpage: one cluster row per cluster, with istioctl columns parsed from the name', () => {
    const c = proxy('productpage');
    const text = formatClusters(c.clusters);
    assert.equal(
      text.split('\n')[0],
      'SERVICE FQDN                                            PORT     SUBSET     DIRECTION     TYPE             DESTINATION RULE',
    );
    const r = rows(text);
    assert.equal(r.length, c.clusters.length);
    assert.ok(
      r.some((x) => x.join('|') === 'reviews.bookinfo.svc.cluster.local|9080|v2|outbound|EDS|reviews.bookinfo'),
      text,
    );
    assert.ok(
      r.some((x) => x.join('|') === 'BlackHoleCluster|-|-|-|STATIC'),
      text,
    );
    // Filters are substring matches on the name, as istioctl's.
    const v2 = rows(formatClusters(c.clusters, { fqdn: 'reviews', subset: 'v2' }));
    assert.deepEqual(
      v2.map((x) => x[2]),
      ['v2'],
    );
    const inbound = rows(formatClusters(c.clusters, { direction: 'inbound' }));
    assert.ok(inbound.length >= 1 && inbound.every((x) => x.includes('inbound')));
  });

  it('productpage: listener rows per filter chain, route rows per route, endpoint rows per LbEndpoint', () => {
    const c = proxy('productpage');
    const chains = c.listeners.reduce((n, l) => n + l.filterChains.length + (l.defaultFilterChain ? 1 : 0), 0);
    assert.equal(rows(formatListeners(c.listeners)).length, chains);
    // The listener table pads by 1 (istioctl's tabwriter there), so check lines by pattern.
    const l9080 = formatListeners(c.listeners, { port: 9080 }).trimEnd().split('\n').slice(1);
    assert.ok(l9080.length > 0 && l9080.every((l) => /^\S+ +9080 /.test(l)), l9080.join('\n'));
    assert.ok(formatListeners(c.listeners, { port: 9080 }).includes('Route: 9080'));
    const short = rows(formatListeners(c.listeners, { verbose: false }));
    assert.equal(short.length, c.listeners.length);

    const routeRows = rows(formatRoutes(c.routes, { name: '9080' }));
    const vs = c.routes.find((r) => r.name === '9080');
    assert.ok(vs);
    assert.equal(
      routeRows.length,
      vs.virtualHosts.reduce((n, vh) => n + Math.max(vh.routes.length, 1), 0),
    );
    assert.deepEqual(
      rows(formatRoutes(c.routes, { verbose: false })).map((x) => x[0]),
      ['80', '9080'],
    );

    const eps = c.endpoints.reduce((n, cla) => n + cla.endpoints.reduce((m, l) => m + l.lbEndpoints.length, 0), 0);
    assert.equal(rows(formatEndpoints(c.endpoints)).length, eps);
    const reviews = rows(formatEndpoints(c.endpoints, { cluster: 'outbound|9080|v2|reviews.bookinfo.svc.cluster.local' }));
    assert.deepEqual(reviews, [['10.1.0.22:9080', 'UNKNOWN', 'OK', 'outbound|9080|v2|reviews.bookinfo.svc.cluster.local']]);
    const summary = rows(formatEndpointsSummary(c.endpoints, { port: 3306 }));
    assert.ok(
      summary.length > 0 && summary.every((x) => x[0] === 'endpoint/10.1.0.50:3306' && x[2] === 'us-east1/us-east1-b'),
      JSON.stringify(summary),
    );
  });
});
