/**
 * A headless Kubernetes Service's endpoints are addresses in the DNS name table: an endpoint-only
 * change (which otherwise goes the EDS-only way) pushes a new table to the proxies that hold one
 * and see the service, and nothing to a proxy that does not ask for NDS.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { NameTableSchema } from '../../gen/dns/proto/nds_pb.js';
import { ConfigStore } from '../../config/store.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { pushRequest, registryKey } from '../../model/index.js';
import { KubeRegistrySnapshot } from '../../registry/kube/kube-snapshot.js';
import { convertService, serviceEndpoints, type PodLookup } from '../../registry/kube/translate.js';
import { silentLogger } from '../../util/log.js';
import { DiscoveryServer } from '../../xds/discovery-server.js';
import { GeneratorRegistry } from '../../xds/generator.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { serveAdsOnLoopback, type LoopbackAds } from '../../../test/support/ads-loopback.js';
import { AdsStream } from '../../../test/support/raw-ads-client.js';
import { quietWindow } from '../../../test/support/wait.js';
import { configCredentials } from '../gateway/config-credentials.js';
import { registerEnvoyGenerators } from '../envoy-generators.js';

const HOST = 'mysql.db.svc.cluster.local';
const svc: V1Service = { metadata: { name: 'mysql', namespace: 'db' }, spec: { clusterIP: 'None', ports: [{ name: 'tcp', port: 3306 }] } };

/** The registry with these pod IPs ready behind the headless service. */
function registryWith(ips: readonly string[]): KubeRegistrySnapshot {
  const slice: V1EndpointSlice = {
    addressType: 'IPv4',
    metadata: { name: 'mysql-x', namespace: 'db' },
    ports: [{ name: 'tcp', port: 3306 }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  };
  const none: PodLookup = { podByName: () => undefined, podsByIp: (): V1Pod[] => [], node: () => undefined };
  const service = convertService(svc, 'cluster.local');
  return new KubeRegistrySnapshot(new Map([[HOST, { service, endpoints: serviceEndpoints(service, svc, [slice], none) }]]));
}

let registry = registryWith(['10.244.2.10']);
let xds: DiscoveryServer | undefined;
let ads: LoopbackAds | undefined;
const streams: AdsStream[] = [];

const ipsOf = (r: { resp: { resources: { value: Uint8Array }[] } }): string[] =>
  fromBinary(NameTableSchema, r.resp.resources[0]!.value).table[HOST]?.ips ?? [];

describe('NDS push on headless endpoint changes', () => {
  before(async () => {
    const store = new ConfigStore();
    xds = new DiscoveryServer({
      generators: registerEnvoyGenerators(new GeneratorRegistry(), {
        logger: silentLogger,
        credentials: (p) => configCredentials(p.config, silentLogger),
      }),
      mesh: defaultMeshConfig(),
      snapshot: () => store.snapshot(),
      registries: () => [registry],
      logger: silentLogger,
      debounce: { debounceAfter: 10, debounceMax: 100 },
      pushThrottle: 10,
    });
    ads = await serveAdsOnLoopback(xds);
  });
  after(async () => {
    for (const s of streams) s.close();
    await ads?.stop();
  });

  it('pushes the new endpoint addresses to NDS holders only', async () => {
    const holder = new AdsStream(ads!.addr, { node: { id: 'sidecar~10.0.0.5~app-0.default~default.svc.cluster.local' } });
    const other = new AdsStream(ads!.addr, { node: { id: 'sidecar~10.0.0.6~app-1.default~default.svc.cluster.local' } });
    streams.push(holder, other);
    holder.subscribe(TypeUrl.NameTable, []);
    const first = await holder.next(TypeUrl.NameTable);
    holder.ack(first.resp);
    assert.deepEqual(ipsOf(first), ['10.244.2.10']);
    other.subscribe(TypeUrl.Cluster, []);
    other.ack((await other.next(TypeUrl.Cluster)).resp);

    registry = registryWith(['10.244.2.10', '10.244.2.11']);
    xds!.configUpdate(
      pushRequest({ full: false, configsUpdated: [registryKey('Endpoints', 'db', HOST)], reason: 'endpoint', start: Date.now() }),
    );
    const next = await holder.next(TypeUrl.NameTable);
    holder.ack(next.resp);
    assert.deepEqual(ipsOf(next), ['10.244.2.10', '10.244.2.11']);
    await quietWindow(300);
    assert.deepEqual(
      other.drain().map((r) => r.resp.typeUrl),
      [],
      'a proxy without NDS stays on the EDS-only path (it watches no EDS here: nothing)',
    );
  });
});
