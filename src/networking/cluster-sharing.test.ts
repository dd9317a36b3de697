/**
 * A service's outbound clusters are cached per DestinationRule that applies, not per namespace of
 * the proxy asking: sidecars of namespaces that resolve the same rule (or none) get the same
 * encoded clusters, and a namespace whose own rule applies gets its own. Proxies of the three
 * namespaces are generated from one PushContext and cache, so a key that shared too much would
 * hand one namespace another's rule.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pushOf } from '../../test/support/config-fixture.js';
import { proxyFor } from '../../test/support/scenario.js';
import { pushRequest } from '../model/push-request.js';
import type { PushContext, Proxy } from '../model/index.js';
import { silentLogger } from '../util/log.js';
import { GeneratorRegistry } from '../xds/generator.js';
import type { XdsResource } from '../xds/resource.js';
import { TypeUrl } from '../xds/type-urls.js';
import { registerEnvoyGenerators } from './envoy-generators.js';
import { configCredentials } from './gateway/config-credentials.js';

const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
  logger: silentLogger,
  credentials: (p) => configCredentials(p.config, silentLogger),
});

const serviceEntry = (host: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: host.split('.')[0], namespace: 'shop' },
  spec: {
    hosts: [host],
    ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
    resolution: 'STATIC',
    endpoints: [{ address: '10.0.0.1' }],
  },
});

/** A rule in `team-y` for b: proxies of team-y apply it (their own namespace first); the others find none. */
const teamYRule = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'DestinationRule',
  metadata: { name: 'b-pool', namespace: 'team-y' },
  spec: { host: 'b.example.com', trafficPolicy: { connectionPool: { tcp: { maxConnections: 7 } } } },
};

const sidecar = (ns: string, n: number): Proxy => proxyFor({ id: `sidecar~10.1.0.${n}~app-${n}.${ns}~${ns}.svc.cluster.local` });

function clusters(push: PushContext, proxy: Proxy): Map<string, XdsResource> {
  const gen = generators.lookup(proxy, TypeUrl.Cluster);
  assert.ok(gen);
  const out = gen.generate(
    proxy,
    { typeUrl: TypeUrl.Cluster, names: new Set(), wildcard: true },
    push,
    pushRequest({ full: true, start: 0 }),
  );
  return new Map((out ?? []).map((r) => [r.name, r]));
}

describe('outbound clusters shared across namespaces by the DestinationRule that applies', () => {
  const push = pushOf([serviceEntry('a.example.com'), serviceEntry('b.example.com'), teamYRule]);
  const [x, y, z] = [sidecar('team-x', 1), sidecar('team-y', 2), sidecar('team-z', 3)];
  const [cx, cy, cz] = [clusters(push, x), clusters(push, y), clusters(push, z)];
  const A = 'outbound|80||a.example.com';
  const B = 'outbound|80||b.example.com';

  it('namespaces that resolve no rule get the very same encoded clusters', () => {
    assert.ok(cx.get(A) && cx.get(B));
    assert.equal(cz.get(A), cx.get(A));
    assert.equal(cz.get(B), cx.get(B));
  });

  it("a namespace whose own rule applies gets its own cluster for that host, and shares the others'", () => {
    assert.equal(cy.get(A), cx.get(A), 'no rule for a anywhere: shared');
    assert.notEqual(cy.get(B)?.version, cx.get(B)?.version);
    const text = (r: XdsResource | undefined): string => Buffer.from(r?.value ?? []).toString('latin1');
    assert.match(text(cy.get(B)), /b-pool/, "team-y's cluster names its rule in the metadata");
    assert.doesNotMatch(text(cx.get(B)), /b-pool/);
  });

  it('a new snapshot without the rule gives team-y the shared cluster again', () => {
    const next = pushOf([serviceEntry('a.example.com'), serviceEntry('b.example.com')]);
    assert.equal(clusters(next, sidecar('team-y', 4)).get(B)?.version, cx.get(B)?.version);
  });
});

describe('outbound clusters kept apart by what else they depend on', () => {
  it('an IPv6-only sidecar gets its own DNS clusters (IPv6 lookups), not an IPv4 neighbour cached one', () => {
    const dns = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'ext', namespace: 'shop' },
      spec: { hosts: ['ext.example.com'], ports: [{ number: 443, name: 'tls', protocol: 'TLS' }], resolution: 'DNS' },
    };
    const push = pushOf([dns]);
    const v4 = clusters(push, proxyFor({ id: 'sidecar~10.1.0.7~app-7.team-x~team-x.svc.cluster.local' }));
    const v6 = clusters(push, proxyFor({ id: 'sidecar~fd00::7~app-8.team-x~team-x.svc.cluster.local' }));
    const name = 'outbound|443||ext.example.com';
    assert.ok(v4.get(name) && v6.get(name));
    assert.notEqual(v6.get(name)?.version, v4.get(name)?.version);
  });
});
