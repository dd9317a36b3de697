/**
 * A DiscoveryServer of a unit test served over a real gRPC server on loopback, so raw SotW and
 * Delta clients (raw-ads-client, raw-delta-client) talk to it as proxies do.
 */
import * as grpc from '@grpc/grpc-js';
import { adsImplementation, adsServiceDefinition } from '../../src/xds/ads-service.js';
import type { DiscoveryServer } from '../../src/xds/discovery-server.js';

export interface LoopbackAds {
  /** `127.0.0.1:port`. */
  readonly addr: string;
  /** Stops the DiscoveryServer, then the gRPC server. */
  stop(): Promise<void>;
}

/** Starts `xds` and serves it on a free loopback port. */
export async function serveAdsOnLoopback(xds: DiscoveryServer): Promise<LoopbackAds> {
  xds.start();
  const server = new grpc.Server();
  server.addService(adsServiceDefinition, adsImplementation(xds));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    addr: `127.0.0.1:${port}`,
    async stop() {
      await xds.stop();
      server.forceShutdown();
    },
  };
}
