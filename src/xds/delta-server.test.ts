/**
 * The Delta stream layer against a plain snapshot generator (no mesh), as go-control-plane tests
 * its server: per-resource pushes, removals, skip-unchanged, and the response size guard (a tiny
 * limit option splits Delta responses; SotW is sent whole with a warning).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigStore } from '../config/store.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { pushRequest } from '../model/push-request.js';
import { serveAdsOnLoopback, type LoopbackAds } from '../../test/support/ads-loopback.js';
import { AdsStream } from '../../test/support/raw-ads-client.js';
import { DeltaStream, type DeltaReceived } from '../../test/support/raw-delta-client.js';
import { quietWindow, waitFor } from '../../test/support/wait.js';
import { createLogger } from '../util/log.js';
import { DiscoveryServer } from './discovery-server.js';
import { GeneratorRegistry, type Generator } from './generator.js';
import { makeResource, type XdsResource } from './resource.js';
import { TypeUrl } from './type-urls.js';

const CDS = TypeUrl.Cluster;
const LIMIT = 2000;
const QUIET_MS = 400;
const node = (pod: string): { id: string } => ({ id: `sidecar~127.0.0.1~${pod}.default~default.svc.cluster.local` });

/** name → content; the fake generator serves every entry as a resource, marshalled once per content. */
const contents = new Map<string, string>();
const cache = new Map<string, XdsResource>();
let generateCalls = 0;
const snapshotGenerator: Generator = {
  generate(_proxy, watched) {
    generateCalls++;
    const out: XdsResource[] = [];
    for (const [name, content] of contents) {
      if (!watched.wildcard && !watched.names.has(name)) continue;
      const key = `${name}|${content}`;
      let r = cache.get(key);
      if (!r) {
        r = makeResource(name, CDS, new TextEncoder().encode(content));
        cache.set(key, r);
      }
      out.push(r);
    }
    return out;
  },
};

const lines: Record<string, unknown>[] = [];
let xds: DiscoveryServer | undefined;
let ads: LoopbackAds | undefined;
let addr = '';
const clients: { close(): void }[] = [];

function push(): void {
  assert.ok(xds);
  xds.configUpdate(pushRequest({ full: true, reason: 'config', start: Date.now() }));
}

async function collect(s: DeltaStream, n: number): Promise<DeltaReceived[]> {
  const out: DeltaReceived[] = [];
  for (let i = 0; i < n; i++) out.push(await s.next(CDS));
  return out;
}

function oversizeWarns(): Record<string, unknown>[] {
  return lines.filter((l) => l.level === 'warn' && l.msg === 'xDS response exceeds the size limit');
}

describe('DiscoveryServer Delta streams (snapshot generator)', () => {
  before(async () => {
    for (let i = 0; i < 10; i++) contents.set(`c${i}`, `cluster-${i}-`.padEnd(500, 'x'));
    const store = new ConfigStore();
    xds = new DiscoveryServer({
      generators: new GeneratorRegistry().register(CDS, snapshotGenerator),
      mesh: defaultMeshConfig(),
      snapshot: () => store.snapshot(),
      logger: createLogger({ sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>), level: 'debug' }),
      debounce: { debounceAfter: 10, debounceMax: 100 },
      pushThrottle: 10,
      maxResponseBytes: LIMIT,
    });
    ads = await serveAdsOnLoopback(xds);
    addr = ads.addr;
  });

  after(async () => {
    for (const c of clients) c.close();
    await ads?.stop();
  });

  it('splits a Delta response over the size limit (own nonce each, all within the limit), warns, and each ACK gets nothing', async () => {
    const s = DeltaStream.open(addr, { node: node('delta-split') });
    clients.push(s);
    s.subscribe(CDS, []);
    const first = await s.next(CDS);
    await waitFor(() => Object.keys(s.holdings(CDS)).length === 10, { description: 'all ten clusters' });
    const parts = [first, ...s.drain()];
    assert.ok(parts.length >= 3, `expected several responses, got ${parts.length}`);
    assert.equal(new Set(parts.map((p) => p.resp.nonce)).size, parts.length, 'each part has its own nonce');
    assert.ok(
      parts.every((p) => p.bytes <= LIMIT),
      `sizes ${parts.map((p) => p.bytes).join(',')}`,
    );
    assert.equal(
      parts.reduce((n, p) => n + p.resp.resources.length, 0),
      10,
    );
    const warn = oversizeWarns().find((l) => String(l.proxy).includes('delta-split'));
    assert.ok(warn, 'a warn line for the split');
    assert.equal(warn.type, 'CDS');
    assert.equal(warn.resources, 10);
    assert.ok(typeof warn.bytes === 'number' && warn.bytes > LIMIT);
    assert.ok((xds?.stats.snapshot().oversized.CDS ?? 0) >= 1, 'counted (meshpilot_xds_oversized_responses_total)');
    for (const p of parts) s.ack(p.resp);
    await quietWindow(QUIET_MS);
    assert.deepEqual(
      s.drain().map((r) => r.resp.nonce),
      [],
      'ACKs are not answered',
    );
  });

  it('a SotW response over the limit cannot be split: sent whole, with a warning', async () => {
    const before = oversizeWarns().length;
    const s = AdsStream.open(addr, { node: node('sotw-big') });
    clients.push(s);
    s.subscribe(CDS, []);
    const r = await s.next(CDS);
    assert.equal(r.resp.resources.length, 10);
    assert.ok(r.bytes > LIMIT);
    const warn = oversizeWarns()
      .slice(before)
      .find((l) => String(l.proxy).includes('sotw-big'));
    assert.ok(warn, 'a warn line for the oversized SotW response');
    assert.equal(warn.delta, false);
  });

  it('a push sends only the changed resource, then removals; an unchanged push sends nothing', async () => {
    const s = DeltaStream.open(addr, { node: node('delta-push') });
    clients.push(s);
    s.subscribe(CDS, ['c1', 'c2', 'nope']);
    const [r] = await collect(s, 1);
    assert.ok(r);
    assert.deepEqual(r.resp.resources.map((x) => x.name).sort(), ['c1', 'c2']);
    assert.deepEqual(r.resp.removedResources, ['nope'], 'a subscribed name that does not exist is answered as removed');
    s.ack(r.resp);

    contents.set('c1', 'changed');
    contents.set('c5', 'changed too (not subscribed)');
    push();
    const changed = await s.next(CDS);
    assert.deepEqual(
      changed.resp.resources.map((x) => x.name),
      ['c1'],
    );
    assert.deepEqual(changed.resp.removedResources, []);
    assert.equal(changed.resp.systemVersionInfo, xds?.push().version);
    s.ack(changed.resp);

    contents.delete('c2');
    push();
    const removed = await s.next(CDS);
    assert.deepEqual(removed.resp.resources, []);
    assert.deepEqual(removed.resp.removedResources, ['c2']);
    s.ack(removed.resp);

    const calls = generateCalls;
    push();
    await waitFor(() => generateCalls > calls, { description: 'the push to run' });
    await quietWindow(QUIET_MS);
    assert.deepEqual(
      s.drain().map((x) => x.resp.nonce),
      [],
      'nothing changed → no response',
    );
  });

  it('unsubscribe gets no response and later removals of that name are not sent', async () => {
    const s = DeltaStream.open(addr, { node: node('delta-unsub') });
    clients.push(s);
    s.subscribe(CDS, ['c3', 'c4']);
    const r = await s.next(CDS);
    s.ack(r.resp);
    s.unsubscribe(CDS, ['c4']);
    contents.delete('c4');
    push();
    await quietWindow(QUIET_MS);
    assert.deepEqual(
      s.drain().map((x) => [x.resp.resources.length, x.resp.removedResources]),
      [],
    );
  });
});
