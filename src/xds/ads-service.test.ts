import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { adsServiceDefinition, type AdsStream } from './ads-service.js';
import { discoveryResponseMessage, makeResource } from './resource.js';
import { wireBytes } from './wire-message.js';

/**
 * The response serializer hands grpc-js a WireMessage, relying on grpc-js reading only its
 * byteLength and copy(): a real server and client of the pinned grpc-js must carry it intact.
 */
describe('responses laid out by grpc-js framing', () => {
  let server: grpc.Server;
  let port: number;
  const resources = Array.from({ length: 50 }, (_, i) => makeResource(`c${i}`, 'type.googleapis.com/envoy.config.cluster.v3.Cluster', Buffer.alloc(1000 + i, i)));
  const message = discoveryResponseMessage({ versionInfo: 'v1', typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', nonce: 'n-1', resources });

  before(async () => {
    server = new grpc.Server();
    server.addService(adsServiceDefinition, {
      StreamAggregatedResources: (call: AdsStream) => {
        call.once('data', () => {
          call.write(message);
          call.end();
        });
      },
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<unknown, unknown>) => call.end(),
    });
    port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  });
  after(() => server.forceShutdown());

  it('the client receives exactly the bytes the message lays out', async () => {
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      const call = client.makeBidiStreamRequest(adsServiceDefinition.StreamAggregatedResources.path, (b: Buffer) => b, (b: Buffer) => b);
      const got = new Promise<Buffer>((resolve, reject) => {
        call.once('data', resolve);
        call.once('error', reject);
      });
      call.write(Buffer.alloc(0));
      assert.deepEqual(await got, wireBytes(message));
      call.end();
    } finally {
      client.close();
    }
  });
});
