/**
 * Envoy keeps a changed EDS cluster warming until that cluster's ClusterLoadAssignment arrives
 * again, even an unchanged one (seen with Envoy 1.40 over Delta ADS: a DestinationRule edit left
 * the new cluster warming and the CDS response unacknowledged). So a push that re-sends a cluster
 * re-sends its assignment; a push that leaves the clusters alone sends no EDS.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigStore } from '../config/store.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { pushRequest } from '../model/push-request.js';
import { serveAdsOnLoopback, type LoopbackAds } from '../../test/support/ads-loopback.js';
import { AdsStream } from '../../test/support/raw-ads-client.js';
import { DeltaStream } from '../../test/support/raw-delta-client.js';
import { quietWindow, waitFor } from '../../test/support/wait.js';
import { createLogger } from '../util/log.js';
import { DiscoveryServer } from './discovery-server.js';
import { GeneratorRegistry, type Generator } from './generator.js';
import { makeResource, type XdsResource } from './resource.js';
import { TypeUrl } from './type-urls.js';

const CDS = TypeUrl.Cluster;
const EDS = TypeUrl.ClusterLoadAssignment;
const QUIET_MS = 400;
const node = (pod: string): { id: string } => ({ id: `sidecar~127.0.0.1~${pod}.default~default.svc.cluster.local` });

/** Per type: name → content, served as marshal-once resources (same content, same resource). */
const contents = new Map<string, Map<string, string>>([
  [
    CDS,
    new Map([
      ['a', 'cluster a'],
      ['b', 'cluster b'],
    ]),
  ],
  [
    EDS,
    new Map([
      ['a', 'endpoints a'],
      ['b', 'endpoints b'],
    ]),
  ],
]);
const cache = new Map<string, XdsResource>();
let generateCalls = 0;
const generator = (typeUrl: string): Generator => ({
  generate(_proxy, watched) {
    generateCalls++;
    const out: XdsResource[] = [];
    for (const [name, content] of contents.get(typeUrl)!) {
      if (!watched.wildcard && !watched.names.has(name)) continue;
      const key = `${typeUrl}|${name}|${content}`;
      let r = cache.get(key);
      if (!r) cache.set(key, (r = makeResource(name, typeUrl, new TextEncoder().encode(content))));
      out.push(r);
    }
    return out;
  },
});

let xds: DiscoveryServer | undefined;
let ads: LoopbackAds | undefined;
let addr = '';
const clients: { close(): void }[] = [];

function push(): void {
  xds!.configUpdate(pushRequest({ full: true, reason: 'config', start: Date.now() }));
}

/** A full push with no cluster (and no assignment) changed: nothing reaches `s`. */
async function pushChangingNothing(s: { drain(): { resp: { typeUrl: string } }[] }): Promise<void> {
  const calls = generateCalls;
  push();
  await waitFor(() => generateCalls > calls, { description: 'the push to run' });
  await quietWindow(QUIET_MS);
  assert.deepEqual(
    s.drain().map((r) => r.resp.typeUrl),
    [],
    'no cluster changed: nothing sent',
  );
}

describe('a re-sent cluster gets its endpoints again', () => {
  before(async () => {
    const store = new ConfigStore();
    xds = new DiscoveryServer({
      generators: new GeneratorRegistry().register(CDS, generator(CDS)).register(EDS, generator(EDS)),
      mesh: defaultMeshConfig(),
      snapshot: () => store.snapshot(),
      logger: createLogger({ sink: () => undefined, level: 'error' }),
      debounce: { debounceAfter: 10, debounceMax: 100 },
      pushThrottle: 10,
    });
    ads = await serveAdsOnLoopback(xds);
    addr = ads.addr;
  });

  after(async () => {
    for (const c of clients) c.close();
    await ads?.stop();
  });

  it('Delta: a changed cluster is followed by its unchanged assignment, only that one', async () => {
    const s = DeltaStream.open(addr, { node: node('delta-warm') });
    clients.push(s);
    s.subscribe(CDS, []);
    s.ack((await s.next(CDS)).resp);
    s.subscribe(EDS, ['a', 'b']);
    s.ack((await s.next(EDS)).resp);

    contents.get(CDS)!.set('a', 'cluster a, new lb policy');
    push();
    const cds = await s.next(CDS);
    assert.deepEqual(
      cds.resp.resources.map((r) => r.name),
      ['a'],
    );
    s.ack(cds.resp);
    const eds = await s.next(EDS);
    assert.deepEqual(
      eds.resp.resources.map((r) => [r.name, new TextDecoder().decode(r.resource?.value)]),
      [['a', 'endpoints a']],
    );
    s.ack(eds.resp);

    await pushChangingNothing(s);
  });

  it('SotW: a changed cluster is followed by the (unchanged) assignments', async () => {
    const s = AdsStream.open(addr, { node: node('sotw-warm') });
    clients.push(s);
    s.subscribe(CDS, []);
    s.ack((await s.next(CDS)).resp);
    s.subscribe(EDS, ['a', 'b']);
    s.ack((await s.next(EDS)).resp);

    contents.get(CDS)!.set('b', 'cluster b, outlier detection');
    push();
    s.ack((await s.next(CDS)).resp);
    const eds = await s.next(EDS);
    assert.deepEqual(eds.resp.resources.length, 2);
    s.ack(eds.resp);

    await pushChangingNothing(s);
  });

  it('SotW: an EDS subscription that grows is answered with the new names alone; one that shrinks and grows, with all it asks', async () => {
    contents.get(EDS)!.set('c', 'endpoints c');
    const s = AdsStream.open(addr, { node: node('sotw-grow') });
    clients.push(s);
    s.subscribe(EDS, ['a', 'b']);
    s.ack((await s.next(EDS)).resp);
    // Envoy once CDS added cluster c: the whole list again, one name more.
    s.subscribe(EDS, ['a', 'b', 'c']);
    const grown = await s.next(EDS);
    assert.deepEqual(
      grown.resp.resources.map((r) => new TextDecoder().decode(r.value)),
      ['endpoints c'],
    );
    s.ack(grown.resp);
    // Not a pure addition (b left): answered with everything it names.
    s.subscribe(EDS, ['a', 'c']);
    const changed = await s.next(EDS);
    assert.deepEqual(changed.resp.resources.map((r) => new TextDecoder().decode(r.value)).sort(), ['endpoints a', 'endpoints c']);
    s.ack(changed.resp);
    contents.get(EDS)!.delete('c');
  });
});
