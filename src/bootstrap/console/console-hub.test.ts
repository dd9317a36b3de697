import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { describe, it, mock } from 'node:test';
import type { ConfigError, ConfigSnapshot } from '../../config/index.js';
import { pushRequest } from '../../model/index.js';
import { silentLogger } from '../../util/log.js';
import { PropagationTracker, PushVolume, type Connection } from '../../xds/index.js';
import type { SentResponse } from '../../xds/xds-observer.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { ConsoleHub, TICK_MS, type ConsoleEvent } from './console-hub.js';
import type { ConfigAnalysis } from './health-view.js';

interface FakeWatch {
  typeUrl: string;
  nonceSent?: string;
  nonceAcked?: string;
  lastError?: { nonce: string; message: string; at: number };
  names: Set<string>;
  wildcard: boolean;
}

/** Just what the console reads of a Connection. */
function fakeConnection(id: string, namespace: string, watches: FakeWatch[]): Connection {
  return {
    id,
    connectedAt: 1_000,
    proxy: {
      id: `sidecar~10.0.0.1~${id}.${namespace}~${namespace}.svc.cluster.local`,
      namespace,
      type: 'sidecar',
      metadata: { istioVersion: '1.28.0' },
    },
    watchedTypes: () => watches,
    isClosed: () => false,
  } as unknown as Connection;
}

const snapshot = { get: () => undefined } as unknown as ConfigSnapshot;

function setup(conns: Connection[], extra: { analyze?: () => Promise<ConfigAnalysis> } = {}) {
  const clock = { t: 10_000, now: () => clock.t };
  const storeListeners: (() => void)[] = [];
  const tracker = new PropagationTracker({ logger: silentLogger, clock });
  const volume = new PushVolume();
  const errors = new Map<string, readonly ConfigError[]>();
  const hub = new ConsoleHub({
    xds: {
      connectionList: () => conns,
      queueDepth: () => ({ pending: 0, processing: 0 }),
      push: () => ({ version: 'v1', registry: { services: [] } }),
      stats: { snapshot: () => ({ pushes: { CDS: 3 } }) },
    },
    tracker,
    volume,
    store: {
      snapshot: () => snapshot,
      errors: () => errors,
      onChange: (fn: () => void) => {
        storeListeners.push(fn);
        return () => {};
      },
    },
    ...extra,
    logger: silentLogger,
    now: () => clock.now(),
  });
  const configChanged = (): void => storeListeners.forEach((fn) => fn());
  return { hub, tracker, volume, clock, errors, configChanged };
}

/**
 * A response stream as the HTTP server hands it over: collects the events written to it, taking
 * each write a turn later (as a socket does), so a large write fills it past its high-water mark.
 */
function openConsole(hub: ConsoleHub): { events: () => Promise<ConsoleEvent[]>; close: () => void } {
  let text = '';
  const res = new Writable({
    highWaterMark: 16 * 1024,
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString('utf8');
      setImmediate(done);
    },
  });
  hub.attach(res as unknown as ServerResponse);
  return {
    /** Every event written so far, once the stream has taken them. */
    events: async () => {
      while (res.writableLength > 0) await new Promise((r) => setImmediate(r));
      return text
        .split('\n\n')
        .filter((b) => b.startsWith('data: '))
        .map((b) => JSON.parse(b.slice('data: '.length)) as ConsoleEvent);
    },
    close: () => {
      res.emit('close');
    },
  };
}

function sent(version: string, bytes: number, typeUrl = TypeUrl.Cluster): SentResponse {
  return { typeUrl, nonce: 'n', version, bytes, resources: 1, req: pushRequest({ full: true, reason: 'config', start: 0 }), delta: false };
}

describe('ConsoleHub', () => {
  it('records nothing while no console is open, and stops recording when the last one closes', () => {
    const { hub, volume } = setup([]);
    volume.pushStarted(undefined, 'v1');
    volume.responseSent(undefined, sent('v1', 100));
    assert.equal(volume.volume('v1'), undefined);
    assert.equal(volume.revision(), 0);
    const c = openConsole(hub);
    assert.equal(volume.active(), true);
    volume.pushStarted(undefined, 'v2');
    volume.responseSent(undefined, sent('v2', 100));
    assert.deepEqual(volume.volume('v2'), { responses: 1, bytes: 100, types: ['CDS'] });
    c.close();
    assert.equal(hub.size(), 0);
    assert.equal(volume.active(), false);
    assert.equal(volume.volume('v2'), undefined);
  });

  it('sends the whole table first, then at most one event per tick with only the changed rows', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    const cds: FakeWatch = { typeUrl: TypeUrl.Cluster, nonceSent: 'a', nonceAcked: 'a', names: new Set(), wildcard: true };
    const conns = [
      fakeConnection('p1', 'shop', [cds]),
      fakeConnection('p2', 'shop', [{ typeUrl: TypeUrl.Cluster, nonceSent: 'b', names: new Set(), wildcard: true }]),
      fakeConnection('p3', 'web', []),
    ];
    const { hub, volume } = setup(conns);
    const c = openConsole(hub);
    const [first] = await c.events();
    assert.equal(first?.full, true);
    assert.deepEqual(
      first?.proxies?.rows?.map((r) => [r.id, r.state]),
      [
        ['p1', 'SYNCED'],
        ['p2', 'STALE'],
        ['p3', 'NOT SENT'],
      ],
    );
    assert.deepEqual(first?.proxies?.counts.byState, { SYNCED: 1, STALE: 1, 'NOT SENT': 1, NACKED: 0 });
    assert.deepEqual(first?.proxies?.counts.byNamespace, { shop: 2, web: 1 });

    // Many stream events within one tick: one event, carrying the one row that changed.
    cds.nonceSent = 'c';
    cds.lastError = { nonce: 'c', message: 'Proto constraint validation failed', at: 1 };
    for (let i = 0; i < 500; i++) volume.ackReceived();
    assert.equal((await c.events()).length, 1, 'nothing is sent between ticks');
    mock.timers.tick(TICK_MS);
    const events = await c.events();
    assert.equal(events.length, 2);
    const delta = events[1]!;
    assert.equal(delta.full, undefined);
    assert.deepEqual(
      delta.proxies?.upsert?.map((r) => [r.id, r.state, r.nack]),
      [['p1', 'NACKED', 'CDS: Proto constraint validation failed']],
    );
    assert.deepEqual(delta.proxies?.remove, []);

    // A quiet tick sends no proxy section; a closed connection is removed.
    const before = (await c.events()).length;
    mock.timers.tick(TICK_MS);
    assert.deepEqual(
      (await c.events()).slice(before).filter((e) => e.proxies),
      [],
    );
    conns.pop();
    volume.disconnected();
    mock.timers.tick(TICK_MS);
    assert.deepEqual((await c.events()).at(-1)?.proxies?.remove, ['p3']);
    c.close();
  });

  it('sends the whole state once: a large first event filling the socket does not make every drain send it again', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    // Enough rows that the first event is far over the stream's high-water mark.
    const conns = Array.from({ length: 400 }, (_, i) => fakeConnection(`p${i}`, 'shop', []));
    const { hub, volume } = setup(conns);
    const c = openConsole(hub);
    for (let i = 0; i < 12; i++) {
      volume.ackReceived();
      mock.timers.tick(TICK_MS);
      await new Promise((r) => setImmediate(r));
    }
    const events = await c.events();
    assert.equal(events.filter((e) => e.full).length, 1);
    assert.ok(
      events.some((e) => e.load?.append),
      'load samples still arrive',
    );
    c.close();
  });

  it('events larger than the socket buffer queue: every row changing each tick sends no whole state again', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    // 400 rows of CDS, each sent and acked in turn: every tick's event carries every row (~40 KB, over the 16 KB mark).
    const watches = Array.from(
      { length: 400 },
      () => ({ typeUrl: TypeUrl.Cluster, names: new Set<string>(), wildcard: true }) as FakeWatch,
    );
    const conns = watches.map((w, i) => fakeConnection(`p${i}`, 'shop', [w]));
    const { hub, volume } = setup(conns);
    const c = openConsole(hub);
    for (let i = 0; i < 8; i++) {
      for (const w of watches) {
        w.nonceSent = `n${i}`;
        if (i % 2 === 1) w.nonceAcked = `n${i}`;
      }
      volume.ackReceived();
      mock.timers.tick(TICK_MS * 16);
      await new Promise((r) => setImmediate(r));
    }
    const events = await c.events();
    assert.ok(events.filter((e) => (e.proxies?.upsert?.length ?? 0) >= 400).length >= 4, 'the deltas carried every row');
    assert.equal(events.filter((e) => e.full).length, 1, 'the whole state was sent once');
    c.close();
  });

  it('analysis of a changed config waits until the push converged (at most 10 s)', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    const conn = fakeConnection('p1', 'shop', []);
    let analyses = 0;
    const analyze = (): Promise<ConfigAnalysis> => {
      analyses++;
      return Promise.resolve({ scope: 'dir', messages: [], errors: [] });
    };
    const { hub, tracker, clock, configChanged } = setup([conn], { analyze });
    const c = openConsole(hub);
    const tick = async (ms: number): Promise<void> => {
      clock.t += ms;
      mock.timers.tick(ms);
      await new Promise((r) => setImmediate(r));
    };
    await tick(TICK_MS * 4);
    assert.equal(analyses, 1, 'the first analysis runs when the console opens');
    const req = pushRequest({ full: true, reason: 'config', configsUpdated: ['VirtualService/shop/r'], start: clock.t });
    tracker.pushStarted(req, 'v2', [conn]);
    tracker.responseSent(conn, { ...sent('v2', 100), req, nonce: 'n1' });
    tracker.proxyPushed(conn, req);
    configChanged();
    await tick(TICK_MS * 12);
    assert.equal(analyses, 1, 'not while the change is in progress');
    tracker.ackReceived(conn, TypeUrl.Cluster, 'n1');
    await tick(TICK_MS * 4);
    assert.equal(analyses, 2, 'once it converged');
    // A change that never converges holds analysis off for 10 s at most.
    const stuck = pushRequest({ full: true, reason: 'config', configsUpdated: ['VirtualService/shop/s'], start: clock.t });
    tracker.pushStarted(stuck, 'v3', [conn]);
    tracker.responseSent(conn, { ...sent('v3', 100), req: stuck, nonce: 'n2' });
    tracker.proxyPushed(conn, stuck);
    configChanged();
    await tick(TICK_MS * 8);
    assert.equal(analyses, 2);
    await tick(10_000);
    assert.equal(analyses, 3);
    c.close();
  });

  it('a second console gets the state at once and sends the first nothing extra', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    const { hub } = setup([fakeConnection('p1', 'shop', [])]);
    const a = openConsole(hub);
    const before = (await a.events()).length;
    const b = openConsole(hub);
    const [first] = await b.events();
    assert.equal(first?.full, true);
    assert.deepEqual(
      first?.proxies?.rows?.map((r) => r.id),
      ['p1'],
    );
    assert.equal((await a.events()).length, before);
    a.close();
    b.close();
  });

  it('follows a change from published to converged, with its push volume and a histogram entry', async (t) => {
    mock.timers.enable({ apis: ['setInterval'] });
    t.after(() => mock.timers.reset());
    const conn = fakeConnection('p1', 'shop', []);
    const { hub, tracker, volume, clock } = setup([conn]);
    const c = openConsole(hub);
    const req = pushRequest({ full: true, reason: 'config', configsUpdated: ['VirtualService/shop/r'], start: clock.t });
    tracker.pushStarted(req, 'v2', [conn]);
    volume.pushStarted(req, 'v2');
    tracker.responseSent(conn, { ...sent('v2', 2048), req, nonce: 'n1' });
    volume.responseSent(conn, { ...sent('v2', 2048), req, nonce: 'n1' });
    tracker.proxyPushed(conn, req);
    mock.timers.tick(TICK_MS);
    const pending = (await c.events()).at(-1)?.changes?.[0];
    assert.equal(pending?.state, 'in-progress');
    assert.deepEqual([pending?.acked, pending?.pending, pending?.proxies], [0, 1, 1]);
    assert.deepEqual(pending?.configs, [{ key: 'VirtualService/shop/r', source: 'deleted' }]);
    clock.t += 120;
    tracker.ackReceived(conn, TypeUrl.Cluster, 'n1');
    mock.timers.tick(TICK_MS);
    const last = (await c.events()).at(-1)!;
    const done = last.changes?.[0];
    assert.equal(done?.state, 'converged');
    assert.equal(done?.acked, 1);
    assert.equal(done?.convergenceMs, 120);
    assert.deepEqual(done?.push, { responses: 1, bytes: 2048, types: ['CDS'] });
    assert.equal(last.histogram?.count, 1);
    assert.equal(last.histogram?.buckets.find((b) => b.count === 1)?.le, 250);
    c.close();
  });
});
