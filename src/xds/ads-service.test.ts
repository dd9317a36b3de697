import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { adsImplementation, adsServiceDefinition, type AdsStream, type DeltaAdsStream } from './ads-service.js';
import { installSharedBlockWrites } from './grpc-parts.js';
import { deltaResponseMessage, discoveryResponseMessage, joinResources, makeResource } from './resource.js';
import { PiecesMessage, wireBytes, type WireMessage } from './wire-message.js';

/**
 * The response serializer hands grpc-js a WireMessage, relying on grpc-js reading only its
 * byteLength and copy(): a real server and client of the pinned grpc-js must carry it intact.
 */
describe('responses laid out by grpc-js framing', () => {
  let server: grpc.Server;
  let port: number;
  const resources = Array.from({ length: 50 }, (_, i) =>
    makeResource(`c${i}`, 'type.googleapis.com/envoy.config.cluster.v3.Cluster', Buffer.alloc(1000 + i, i)),
  );
  const own = [makeResource('inbound|1', 'type.googleapis.com/envoy.config.cluster.v3.Cluster', Buffer.alloc(300, 7))];
  const cds = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
  // A small list (laid out by grpc-js's framing), and lists with a shared block (written as parts).
  const messages: readonly WireMessage[] = [
    discoveryResponseMessage({ versionInfo: 'v1', typeUrl: cds, nonce: 'n-0', resources: resources.slice(0, 3) }),
    discoveryResponseMessage({ versionInfo: 'v1', typeUrl: cds, nonce: 'n-1', resources }),
    discoveryResponseMessage({ versionInfo: 'v2', typeUrl: cds, nonce: 'n-2', resources: joinResources(resources, own) }),
    deltaResponseMessage({
      systemVersionInfo: 'v2',
      typeUrl: cds,
      nonce: 'n-3',
      resources: joinResources(resources, own),
      removed: ['gone', 'also-gone'],
    }),
  ];
  const written = (call: AdsStream | DeltaAdsStream): void => {
    call.once('data', () => {
      for (const m of messages) call.write(m);
      call.end();
    });
  };

  before(async () => {
    server = new grpc.Server();
    server.addService(adsServiceDefinition, adsImplementation({ handleStream: written, handleDeltaStream: written }));
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
  });
  after(() => server.forceShutdown());

  it('shares blocks: the long lists are pieces with a shared block, and the hook is in place for the pinned grpc-js', () => {
    assert.equal(installSharedBlockWrites(), true);
    assert.deepEqual(
      messages.map((m) => m instanceof PiecesMessage && m.shared),
      [false, true, true, true],
    );
  });

  for (const path of [adsServiceDefinition.StreamAggregatedResources.path, adsServiceDefinition.DeltaAggregatedResources.path]) {
    it(`the client receives exactly the bytes each message lays out, in order (${path.split('/').pop()})`, async () => {
      const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      try {
        const call = client.makeBidiStreamRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
        );
        const got = new Promise<Buffer[]>((resolve, reject) => {
          const all: Buffer[] = [];
          call.on('data', (b: Buffer) => all.push(b));
          call.once('end', () => resolve(all));
          call.once('error', reject);
        });
        call.write(Buffer.alloc(0));
        assert.deepEqual(await got, messages.map(wireBytes));
        call.end();
      } finally {
        client.close();
      }
    });
  }
});
