/**
 * A waypoint proxy's config (node type `waypoint`) for test/scenarios/waypoint: its shape as
 * istiod's (the three listeners, the inbound-vip clusters of the bound services only, HBONE
 * endpoints, routes from the VirtualService, RBAC of the policies targeting the waypoint or the
 * service, peer identity from filter state), and upstream Envoy 1.40 loading all of it in
 * `--mode validate`. The same config as istio-proxy would get is refused by stock Envoy, so the
 * check can fail.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { toJsonString } from '@bufbuild/protobuf';
import {
  HttpConnectionManager_ForwardClientCertDetails,
  HttpConnectionManagerSchema,
} from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { ConfigSchema as SetFilterStateSchema } from '../../src/gen/envoy/extensions/filters/http/set_filter_state/v3/set_filter_state_pb.js';
import { RBACSchema } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { REPO_ROOT } from '../support/paths.js';
import { envoySkipReason } from '../support/envoy.js';
import { envoyValidate, validationBootstrap } from '../support/envoy-validate.js';
import { generateFor, loadScenario, proxyFor, type GeneratedConfig, type NodeSpec } from '../support/scenario.js';
import { stockEnvoyNodeFields } from '../support/stock-envoy.js';

const DIR = join(REPO_ROOT, 'test', 'scenarios', 'waypoint', 'config');
const WAYPOINT: NodeSpec = {
  id: 'waypoint~10.244.1.20~waypoint-5c8f9d7b6-w4ypt.apps~apps.svc.cluster.local',
  labels: { 'gateway.networking.k8s.io/gateway-name': 'waypoint', 'gateway.networking.k8s.io/gateway-class-name': 'istio-waypoint' },
  metadata: { NAMESPACE: 'apps' },
};

async function generate(asStockEnvoy: boolean): Promise<GeneratedConfig> {
  const { push } = await loadScenario(DIR);
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  return generateFor(push, generators, proxyFor({ ...WAYPOINT, ...(asStockEnvoy ? { declares: stockEnvoyNodeFields() } : {}) }));
}

function hcmOf(config: GeneratedConfig, listener: string, chain: string) {
  const l = config.listeners.find((x) => x.name === listener);
  const fc = l?.filterChains.find((c) => c.name === chain);
  const f = fc?.filters.find((x) => x.name === 'envoy.filters.network.http_connection_manager');
  return f?.configType.case === 'typedConfig' ? anyUnpack(f.configType.value, HttpConnectionManagerSchema) : undefined;
}

describe('waypoint config', () => {
  let stock: GeneratedConfig;
  before(async () => (stock = await generate(true)));

  it("has istiod's listeners and the clusters of the bound services only", () => {
    assert.deepEqual(
      stock.listeners.map((l) => l.name),
      ['connect_terminate', 'main_internal', 'connect_originate'],
    );
    assert.deepEqual(
      stock.clusters.map((c) => c.name),
      [
        'main_internal',
        'encap',
        'inbound-vip|9080|http|reviews.apps.svc.cluster.local',
        'inbound-vip|9080|http/v1|reviews.apps.svc.cluster.local',
        'inbound-vip|9080|http/v2|reviews.apps.svc.cluster.local',
        'inbound-vip|9090|http|reviews.apps.svc.cluster.local',
        'inbound-vip|9090|http/v1|reviews.apps.svc.cluster.local',
        'inbound-vip|9090|http/v2|reviews.apps.svc.cluster.local',
        'inbound-vip|9091|tcp|reviews.apps.svc.cluster.local',
        'inbound-vip|9091|tcp/v1|reviews.apps.svc.cluster.local',
        'inbound-vip|9091|tcp/v2|reviews.apps.svc.cluster.local',
        'inbound-vip|3306|tcp|vm-db.apps.mesh',
        'connect_originate',
      ],
    );
  });

  it('sends ambient endpoints through connect_originate and others directly', () => {
    const v1 = stock.endpoints.find((e) => e.clusterName === 'inbound-vip|9080|http/v1|reviews.apps.svc.cluster.local');
    const ep = v1?.endpoints[0]?.lbEndpoints[0];
    assert.equal(v1?.endpoints.flatMap((g) => g.lbEndpoints).length, 1, 'the subset selects v1 only');
    const addr = ep?.hostIdentifier.case === 'endpoint' ? ep.hostIdentifier.value.address?.address : undefined;
    assert.equal(addr?.case, 'envoyInternalAddress');
    assert.equal(addr?.case === 'envoyInternalAddress' ? addr.value.endpointId : '', '10.244.1.10:8080');
    const db = stock.endpoints.find((e) => e.clusterName === 'inbound-vip|3306|tcp|vm-db.apps.mesh');
    const dbAddr = db?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
    assert.equal(dbAddr?.case === 'endpoint' ? dbAddr.value.address?.address.case : '', 'socketAddress');
  });

  it("routes by the VirtualService to the waypoint's subset clusters, and applies the waypoint's and the service's policies", () => {
    const hcm = hcmOf(stock, 'main_internal', 'inbound-vip|9080|http|reviews.apps.svc.cluster.local');
    assert.ok(hcm, 'the HTTP chain of reviews:9080');
    const rc = hcm.routeSpecifier.case === 'routeConfig' ? hcm.routeSpecifier.value : undefined;
    const routes = rc?.virtualHosts[0]?.routes ?? [];
    const first = routes[0]?.action.case === 'route' ? routes[0].action.value.clusterSpecifier : undefined;
    assert.deepEqual(first, { case: 'cluster', value: 'inbound-vip|9080|http/v2|reviews.apps.svc.cluster.local' });
    const rbac = hcm.httpFilters.filter((f) => f.name === 'envoy.filters.http.rbac');
    assert.equal(rbac.length, 2, 'a DENY (service) and an ALLOW (waypoint) filter');
    const json = rbac
      .map((f) => (f.configType.case === 'typedConfig' ? toJsonString(RBACSchema, anyUnpack(f.configType.value, RBACSchema)!) : ''))
      .join('\n');
    assert.match(json, /io\.istio\.peer_principal/);
    assert.match(json, /spiffe:\/\/cluster\.local\/ns\/apps\/sa\/ratings/);
    assert.match(json, /DELETE/);
    assert.doesNotMatch(json, /"authenticated"/, 'a waypoint reads the peer from filter state, not its own TLS connection');
  });

  it('main_internal inspects only where needed: HTTP everywhere when workloads are bound, else on sniffed ports; TLS only beside a TLS port', async () => {
    const names = (l: GeneratedConfig['listeners'][number] | undefined): string[] => (l?.listenerFilters ?? []).map((f) => f.name);
    const main = stock.listeners.find((l) => l.name === 'main_internal');
    assert.deepEqual(names(main), ['envoy.filters.listener.original_dst', 'envoy.filters.listener.http_inspector']);
    assert.equal(main?.listenerFilters[1]?.filterDisabled, undefined, 'a bound workload is reached on any port');
    const { push } = await loadScenario(DIR);
    const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: silentLogger,
      credentials: (p) => configCredentials(p.config, silentLogger),
    });
    const db = generateFor(
      push,
      generators,
      proxyFor({ ...WAYPOINT, labels: { 'gateway.networking.k8s.io/gateway-name': 'db-waypoint' } }),
    );
    const dbMain = db.listeners.find((l) => l.name === 'main_internal');
    assert.deepEqual(names(dbMain), [
      'envoy.filters.listener.original_dst',
      'envoy.filters.listener.http_inspector',
      'envoy.filters.listener.tls_inspector',
    ]);
    const ports = (i: number): number[] => {
      const d = dbMain?.listenerFilters[i]?.filterDisabled?.rule;
      const rules = d?.case === 'orMatch' ? d.value.rules : d ? [{ rule: d }] : [];
      return rules.flatMap((r) => (r.rule.case === 'destinationPortRange' ? [r.rule.value.start] : []));
    };
    assert.deepEqual(ports(1), [443, 5432, 8080], 'no port of db is sniffed');
    assert.deepEqual(ports(2), [5432, 8080], 'the TLS inspector runs on 443 only');
    assert.deepEqual(
      db.clusters.map((c) => c.name).filter((n) => n.startsWith('inbound-vip')),
      [
        'inbound-vip|5432|tcp|db.apps.svc.cluster.local',
        'inbound-vip|443|tcp|db.apps.svc.cluster.local',
        'inbound-vip|8080|http|db.apps.svc.cluster.local',
      ],
    );
    assert.deepEqual(
      db.listeners.find((l) => l.name === 'main_internal')?.filterChains.map((c) => c.name),
      [
        'inbound-vip|5432|tcp|db.apps.svc.cluster.local',
        'inbound-vip|443|tcp|db.apps.svc.cluster.local',
        'inbound-vip|8080|http|db.apps.svc.cluster.local',
        'direct-tcp',
      ],
    );
  });

  it("terminates HBONE as istiod does, with istio-proxy's peer metadata only where the proxy has it", async () => {
    const check = (c: GeneratedConfig, filters: string[], factory: string): void => {
      const hcm = hcmOf(c, 'connect_terminate', 'default');
      assert.ok(hcm, 'connect_terminate has its HCM');
      assert.deepEqual(
        hcm.httpFilters.map((f) => f.name),
        filters,
      );
      assert.equal(hcm.forwardClientCertDetails, HttpConnectionManager_ForwardClientCertDetails.APPEND_FORWARD);
      const route = hcm.routeSpecifier.case === 'routeConfig' ? hcm.routeSpecifier.value.virtualHosts[0]?.routes[0] : undefined;
      assert.equal(route?.match?.pathSpecifier.case, 'connectMatcher');
      assert.deepEqual(route?.action.case === 'route' ? route.action.value.clusterSpecifier : undefined, {
        case: 'cluster',
        value: 'main_internal',
      });
      const sfs = hcm.httpFilters.find((f) => f.name === 'connect_authority');
      const cfg = sfs?.configType.case === 'typedConfig' ? anyUnpack(sfs.configType.value, SetFilterStateSchema) : undefined;
      const peer = cfg?.onRequestHeaders.find((v) => v.key.case === 'objectKey' && v.key.value === 'io.istio.peer_principal');
      assert.equal(peer?.factoryKey, factory);
    };
    check(stock, ['connect_authority', 'envoy.filters.http.router'], 'envoy.string');
    check(
      await generate(false),
      ['waypoint_downstream_peer_metadata', 'connect_authority', 'envoy.filters.http.router'],
      'istio.hashable_string',
    );
  });

  it('nothing binds to a waypoint whose Gateway does not exist', async () => {
    const { push } = await loadScenario(DIR);
    const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: silentLogger,
      credentials: (p) => configCredentials(p.config, silentLogger),
    });
    const other = generateFor(push, generators, proxyFor({ ...WAYPOINT, labels: { 'gateway.networking.k8s.io/gateway-name': 'gone' } }));
    assert.deepEqual(
      other.clusters.map((c) => c.name),
      ['main_internal', 'encap', 'connect_originate'],
    );
  });
});

/** Internal listeners need Envoy's internal_listener bootstrap extension, which a proxy's bootstrap carries (as Istio's does). */
function withInternalListeners(c: GeneratedConfig) {
  return {
    ...validationBootstrap(WAYPOINT.id, c),
    bootstrapExtensions: [
      {
        name: 'envoy.bootstrap.internal_listener',
        typedConfig: { '@type': 'type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener' },
      },
    ],
  };
}

describe('upstream Envoy loads the waypoint config', { skip: envoySkipReason() }, () => {
  it('as generated for stock Envoy: accepted', async () => {
    const c = await generate(true);
    const r = await envoyValidate(WAYPOINT.id, c, withInternalListeners(c));
    assert.ok(r.ok, r.output.slice(0, 3000));
  });

  it('without the internal_listener bootstrap extension: refused (main_internal is an internal listener)', async () => {
    const r = await envoyValidate(WAYPOINT.id, await generate(true));
    assert.equal(r.ok, false);
    assert.match(r.output, /InternalListener bootstrap extension/);
  });

  it("as generated for istio-proxy: refused by stock Envoy (Istio's filters), so the check above can fail", async () => {
    const c = await generate(false);
    const r = await envoyValidate(WAYPOINT.id, c, withInternalListeners(c));
    assert.equal(r.ok, false);
    assert.match(r.output, /istio|TypedStruct/);
  });
});
