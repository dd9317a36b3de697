/**
 * A closed connection leaves nothing behind: 40 sidecars, each at its own address, connect to an
 * in-process DiscoveryServer wired as `meshpilot discovery` wires it (metrics and push-status
 * observers, the admission gate), subscribe to CDS and LDS, receive a config change while
 * connected (some never ACK it), and disconnect. Afterwards, counted rather than timed:
 * no registered connection, an empty connection index (addresses, watched name sets, wildcard
 * watchers), no push-status detail or open push for any of them, no admitted or waiting stream,
 * and no xDS cache entry built for their addresses (inbound clusters and listeners, service
 * instances). Before the last check existed, every new address left two cache entries (~4 KB)
 * until the 60,000-entry LRU bound: connection churn grew the heap ~3.5 KB per cycle.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { instancesDep } from '../../src/model/dependency-tokens.js';
import { startFuzzXdsServer, type FuzzXdsServer } from '../support/fuzz/xds-fuzz-server.js';
import { AdsStream, type AdsNode } from '../support/raw-ads-client.js';
import { waitFor } from '../support/wait.js';
import { TYPE } from '../support/xds-resources.js';

const PROXIES = 40;
const address = (i: number): string => `10.251.0.${i + 1}`;

function sidecar(i: number): AdsNode {
  return {
    id: `sidecar~${address(i)}~leftover-${i}.default~default.svc.cluster.local`,
    metadata: { NAMESPACE: 'default', LABELS: { app: 'leftover' }, INSTANCE_IPS: address(i) },
  };
}

let srv: FuzzXdsServer | undefined;

describe('faults: closed connections leave nothing behind', () => {
  before(async () => {
    srv = await startFuzzXdsServer({ asShipped: true });
  });
  after(async () => {
    await srv?.stop();
  });

  it('connection index, push status, admission gate and per-address cache entries are empty after disconnect', async () => {
    const s = srv as FuzzXdsServer;
    const streams = Array.from({ length: PROXIES }, (_, i) => AdsStream.open(s.addr, { node: sidecar(i), separateConnection: true }));
    try {
      await Promise.all(
        streams.map(async (st) => {
          st.subscribe(TYPE.CDS, []);
          st.subscribe(TYPE.LDS, []);
          await st.next(TYPE.CDS, 20_000);
          await st.next(TYPE.LDS, 20_000);
        }),
      );
      const cache = s.xds.push().cache;
      const tokens = new Set(Array.from({ length: PROXIES }, (_, i) => instancesDep(address(i))));
      const perAddress = (): number => [...cache.entriesForDebug()].filter(([, , deps]) => deps.some((d) => tokens.has(d))).length;
      // The measure measures something: while connected, their inbound config is cached per address.
      assert.ok(perAddress() >= PROXIES, `only ${perAddress()} cache entries for ${PROXIES} connected addresses`);
      assert.equal(s.xds.indexSizes().byAddress, PROXIES);

      // A change while connected: half of them ACK it, half close with it pending.
      s.change('leftovers');
      await Promise.all(
        streams.slice(0, PROXIES / 2).map(async (st) => {
          const r = await st.next(TYPE.CDS, 20_000);
          st.ack(r.resp);
        }),
      );
    } finally {
      for (const st of streams) st.close();
    }
    await waitFor(() => s.xds.connectionList().length === 0 && s.gate?.stats().active === 0, {
      timeoutMs: 20_000,
      description: 'every stream closed on the server',
    });

    assert.deepEqual(s.xds.indexSizes(), { byAddress: 0, watchedSets: 0, names: 0, held: 0, wildcard: 0 });
    assert.equal(s.tracker?.connectionsTracked(), 0, 'push status still refers to closed connections');
    assert.equal(s.gate?.stats().waiting, 0);
    const cache = s.xds.push().cache;
    // By what they read (the address's service instances) and by their keys (which spell the workload's address).
    const left = [...cache.entriesForDebug()]
      .filter(([key, , deps]) => key.includes('10.251.') || deps.some((d) => d.startsWith('instances@10.251.')))
      .map(([k]) => k);
    assert.deepEqual(left, [], 'cache entries built for the addresses of closed connections');
  });
});
