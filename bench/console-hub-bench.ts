/**
 * What an open web console costs the server per tick, in process: a ConsoleHub over N connections
 * (stand-ins with four watched types each) and one attached console, ticked with every row
 * changing (the worst case: a push reaching every proxy between two ticks) and with nothing
 * changing (the idle mesh). Reports the milliseconds per tick and the share of one core at the
 * hub's 4 ticks a second (the table's rebuilds are spaced to stay near 5% of the event loop, so
 * the worst case shows that cap), and the bytes a console receives per tick.
 *
 *   npx tsx bench/console-hub-bench.ts [--proxies 2000] [--ticks 200]
 */
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import type { ConfigError, ConfigSnapshot } from '../src/config/index.js';
import { ConsoleHub, TICK_MS } from '../src/bootstrap/console/console-hub.js';
import { silentLogger } from '../src/util/log.js';
import { PropagationTracker, PushVolume, type Connection } from '../src/xds/index.js';
import { TypeUrl } from '../src/xds/type-urls.js';

const { values } = parseArgs({ options: { proxies: { type: 'string', default: '2000' }, ticks: { type: 'string', default: '200' } } });
const N = Number(values.proxies);
const TICKS = Number(values.ticks);

interface Watch {
  typeUrl: string;
  nonceSent: string;
  nonceAcked: string;
  names: Set<string>;
  wildcard: boolean;
}

const watches: Watch[][] = [];
const conns: Connection[] = [];
for (let i = 0; i < N; i++) {
  const ns = `ns-${i % 20}`;
  const w = [TypeUrl.Cluster, TypeUrl.ClusterLoadAssignment, TypeUrl.Listener, TypeUrl.RouteConfiguration].map((typeUrl) => ({
    typeUrl,
    nonceSent: 'n0',
    nonceAcked: 'n0',
    names: new Set<string>(),
    wildcard: true,
  }));
  watches.push(w);
  conns.push({
    id: `conn-${i}`,
    connectedAt: Date.now(),
    proxy: {
      id: `sidecar~10.0.${i >> 8}.${i & 255}~app-${i}.${ns}~${ns}.svc.cluster.local`,
      namespace: ns,
      type: 'sidecar',
      metadata: { istioVersion: '1.28.0' },
    },
    watchedTypes: () => w,
    isClosed: () => false,
  } as unknown as Connection);
}

const volume = new PushVolume();
const hub = new ConsoleHub({
  xds: {
    connectionList: () => conns,
    queueDepth: () => ({ pending: 0, processing: 0 }),
    push: () => ({ version: 'v1', registry: { services: [] } }),
    stats: { snapshot: () => ({ pushes: {} }) },
  },
  tracker: new PropagationTracker({ logger: silentLogger, clock: { now: () => Date.now() } }),
  volume,
  store: {
    snapshot: () => ({ get: () => undefined }) as unknown as ConfigSnapshot,
    errors: () => new Map<string, ConfigError[]>(),
    onChange: () => () => {},
  },
  logger: silentLogger,
});
let received = 0;
const sink = new Writable({
  write(chunk: Buffer, _e, done) {
    received += chunk.length;
    done();
  },
});
hub.attach(sink as unknown as ServerResponse);
// The hub's own timer is replaced by direct steps: measure the work, not the interval.
const step = (hub as unknown as { step(): void }).step.bind(hub);

function run(label: string, mutate: (tick: number) => void): void {
  received = 0;
  const start = performance.now();
  for (let t = 0; t < TICKS; t++) {
    mutate(t);
    step();
  }
  const ms = (performance.now() - start) / TICKS;
  const share = (ms / TICK_MS) * 100;
  process.stdout.write(
    `${label.padEnd(32)} ${ms.toFixed(2).padStart(7)} ms/tick  ${share.toFixed(1).padStart(5)}% of a core at ${1000 / TICK_MS}/s  ${Math.round(received / TICKS / 1024)} KiB/tick\n`,
  );
}

process.stdout.write(`${N} proxies, ${TICKS} ticks each\n`);
run('every row changes every tick', (t) => {
  for (const w of watches) {
    const cds = w[0]!;
    // Alternate between STALE and SYNCED: the row's state differs from the last tick's.
    cds.nonceSent = `n${t + 1}`;
    if (t % 2 === 0) cds.nonceAcked = cds.nonceSent;
  }
  volume.ackReceived();
});
run('nothing changes', () => {});
hub.close();
