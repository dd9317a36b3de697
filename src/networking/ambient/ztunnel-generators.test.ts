/**
 * ztunnel's types through the real DiscoveryServer and Delta stream, in process: the Kubernetes
 * side is a registry snapshot whose ambient state the test replaces, as the Kubernetes registry
 * does. One pod added sends that one Address; its deletion sends its name as removed; a
 * VirtualService change does not push the ztunnel at all (no push is queued for it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import type { V1Pod } from '@kubernetes/client-node';
import { serveAdsOnLoopback, type LoopbackAds } from '../../../test/support/ads-loopback.js';
import { DeltaStream, type DeltaReceived } from '../../../test/support/raw-delta-client.js';
import { quietWindow, waitFor } from '../../../test/support/wait.js';
import { ConfigStore } from '../../config/store.js';
import { AddressSchema } from '../../gen/workloadapi/workload_pb.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { pushRequest } from '../../model/push-request.js';
import type { AmbientKubeState, AmbientPod } from '../../registry/ambient-model.js';
import { ambientPod, ambientService } from '../../registry/kube/ambient-translate.js';
import { KubeRegistrySnapshot } from '../../registry/kube/kube-snapshot.js';
import { silentLogger } from '../../util/log.js';
import type { Connection } from '../../xds/connection.js';
import { DiscoveryServer } from '../../xds/discovery-server.js';
import { GeneratorRegistry } from '../../xds/generator.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { registerZtunnelGenerators } from './ztunnel-generators.js';

const QUIET_MS = 500;
const ZTUNNEL = { id: 'ztunnel~10.0.0.9~ztunnel-a.istio-system~istio-system.svc.cluster.local' };

function pod(name: string, ip: string): AmbientPod {
  const v: V1Pod = {
    metadata: { name, namespace: 'shop', labels: { app: 'cart' } },
    spec: { serviceAccountName: 'cart', nodeName: 'node-1', containers: [] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
  const a = ambientPod(v, undefined);
  assert.ok(a);
  return a;
}

let state: AmbientKubeState = {
  pods: new Map([
    ['shop/cart-1', pod('cart-1', '10.1.0.1')],
    ['shop/cart-2', pod('cart-2', '10.1.0.2')],
  ]),
  services: new Map([
    [
      'shop/cart',
      ambientService({
        metadata: { name: 'cart', namespace: 'shop' },
        spec: { clusterIP: '10.96.0.1', selector: { app: 'cart' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      }),
    ],
  ]),
  namespaces: new Map([['shop', { 'istio.io/dataplane-mode': 'ambient' }]]),
};
let registry = new KubeRegistrySnapshot(new Map(), undefined, undefined, state);

let xds: DiscoveryServer | undefined;
let ads: LoopbackAds | undefined;
let ztunnel: DeltaStream | undefined;
const pushed: Connection[] = [];

/** Publishes a new Kubernetes state and asks for the push the registry listener would. */
function change(next: AmbientKubeState, key: string): void {
  state = next;
  registry = new KubeRegistrySnapshot(new Map(), undefined, undefined, state);
  xds?.configUpdate(pushRequest({ full: false, configsUpdated: [key], reason: 'ambient', start: Date.now() }));
}

const names = (r: DeltaReceived): string[] => r.resp.resources.map((x) => x.name).sort();

describe('ztunnel generators through the Delta stream', () => {
  before(async () => {
    const store = new ConfigStore();
    xds = new DiscoveryServer({
      generators: registerZtunnelGenerators(new GeneratorRegistry(), { clusterId: 'Kubernetes' }),
      mesh: defaultMeshConfig(),
      snapshot: () => store.snapshot(),
      registries: () => [registry],
      observers: [{ proxyPushed: (conn) => void pushed.push(conn) }],
      logger: silentLogger,
      debounce: { debounceAfter: 10, debounceMax: 100 },
      pushThrottle: 10,
    });
    ads = await serveAdsOnLoopback(xds);
  });

  after(async () => {
    ztunnel?.close();
    await ads?.stop();
  });

  it('the first requests get every Address and an empty Authorization answer', async () => {
    assert.ok(ads);
    ztunnel = DeltaStream.open(ads.addr, { node: ZTUNNEL });
    ztunnel.send({ typeUrl: TypeUrl.Address });
    ztunnel.send({ typeUrl: TypeUrl.Authorization });
    const addresses = await ztunnel.next(TypeUrl.Address);
    const policies = await ztunnel.next(TypeUrl.Authorization);
    assert.deepEqual(names(addresses), ['Kubernetes//Pod/shop/cart-1', 'Kubernetes//Pod/shop/cart-2', 'shop/cart.shop.svc.cluster.local']);
    const cart1 = addresses.resp.resources.find((r) => r.name === 'Kubernetes//Pod/shop/cart-1');
    assert.ok(cart1?.resource);
    const decoded = fromBinary(AddressSchema, cart1.resource.value);
    assert.equal(decoded.type.case, 'workload');
    assert.deepEqual(policies.resp.resources, []);
    ztunnel.ack(addresses.resp);
    ztunnel.ack(policies.resp);
  });

  it('one pod added: one Address sent', async () => {
    assert.ok(ztunnel);
    ztunnel.drain();
    change({ ...state, pods: new Map([...state.pods, ['shop/cart-3', pod('cart-3', '10.1.0.3')]]) }, 'Ambient/shop/cart-3');
    const r = await ztunnel.next(TypeUrl.Address);
    assert.deepEqual(names(r), ['Kubernetes//Pod/shop/cart-3']);
    assert.deepEqual(r.resp.removedResources, []);
    ztunnel.ack(r.resp);
  });

  it('the pod deleted: its name removed, nothing else sent', async () => {
    assert.ok(ztunnel);
    change({ ...state, pods: new Map([...state.pods].filter(([k]) => k !== 'shop/cart-3')) }, 'Ambient/shop/cart-3');
    const r = await ztunnel.next(TypeUrl.Address);
    assert.deepEqual(names(r), []);
    assert.deepEqual(r.resp.removedResources, ['Kubernetes//Pod/shop/cart-3']);
    ztunnel.ack(r.resp);
  });

  it('a VirtualService change queues no push for the ztunnel', async () => {
    assert.ok(ztunnel && xds);
    await quietWindow(QUIET_MS);
    const before = pushed.length;
    xds.configUpdate(pushRequest({ full: true, configsUpdated: ['VirtualService/shop/cart'], reason: 'config', start: Date.now() }));
    xds.configUpdate(pushRequest({ full: true, configsUpdated: ['Sidecar/shop/default'], reason: 'config', start: Date.now() }));
    await quietWindow(QUIET_MS);
    assert.equal(pushed.length, before, 'no push reached the ztunnel');
    // The same path does push for what ambient reads (the check can fail).
    xds.configUpdate(pushRequest({ full: true, configsUpdated: ['WorkloadEntry/shop/vm'], reason: 'config', start: Date.now() }));
    await waitFor(() => pushed.length > before, { description: 'a push for a WorkloadEntry change' });
    assert.deepEqual(ztunnel.drain().map(names), [], 'nothing changed for it, so nothing was sent');
  });
});
