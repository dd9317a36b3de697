import * as grpc from '@grpc/grpc-js';
import type { Server as HttpServer } from 'node:http';
import { configKeyString } from '../config/config.js';
import { ConfigStore } from '../config/store.js';
import { FileSource } from '../config/sources/file-source.js';
import { defaultMeshConfig } from '../model/mesh-config.js';
import { pushRequest } from '../model/push-request.js';
import { registerGrpcGenerators } from '../networking/grpc/grpc-generators.js';
import type { Logger } from '../util/log.js';
import { adsServiceDefinition } from '../xds/ads-service.js';
import { DiscoveryServer } from '../xds/discovery-server.js';
import { GeneratorRegistry } from '../xds/generator.js';
import { debugHandlers } from './debug-handlers.js';
import { startHttpServer, type Handler } from './http-server.js';
import { parseListenAddress, type DiscoveryOptions } from './options.js';

export interface RunningDiscovery {
  readonly grpcAddress: string;
  readonly httpAddress: string;
  readonly monitoringAddress: string;
  readonly xds: DiscoveryServer;
  readonly store: ConfigStore;
  stop(): Promise<void>;
}

/** Max gRPC message a client may send us (istiod: 4 MiB). */
const MAX_RECEIVE_BYTES = 4 * 1024 * 1024;

/**
 * `meshpilot discovery`: config directory → store → DiscoveryServer → gRPC ADS, plus the HTTP
 * servers. /ready turns 200 once the first load has been applied and the first PushContext built.
 */
export async function startDiscovery(opts: DiscoveryOptions, log: Logger): Promise<RunningDiscovery> {
  const mesh = defaultMeshConfig({ domain: opts.domain });
  const store = new ConfigStore({ logger: log.child('config') });
  const source = new FileSource({ dir: opts.configDir, logger: log.child('file') });
  const generators = registerGrpcGenerators(new GeneratorRegistry());
  const xds = new DiscoveryServer({
    generators,
    mesh,
    snapshot: () => store.snapshot(),
    logger: log.child('ads'),
    debounce: { debounceAfter: opts.debounceAfterMs, debounceMax: opts.debounceMaxMs, enableEDSDebounce: opts.enableEdsDebounce },
    pushThrottle: opts.pushThrottle,
    cacheSize: opts.xdsCacheSize,
  });
  let ready = false;
  const http: HttpServer[] = [];

  const readyHandler: Handler = () => (ready ? { status: 200, body: 'ready\n' } : { status: 503, body: 'not ready: initial config load in progress\n' });
  const debug = debugHandlers(xds);
  const httpListen = parseListenAddress(opts.httpAddr, '--httpAddr');
  const httpServer = await startHttpServer(httpListen.host, httpListen.port, new Map([['/ready', readyHandler], ...debug]), log, 'http');
  http.push(httpServer.server);
  const monListen = parseListenAddress(opts.monitoringAddr, '--monitoringAddr');
  const metricsHandler: Handler = async () => ({ status: 200, body: await xds.stats.registry.metrics(), contentType: xds.stats.registry.contentType });
  const monServer = await startHttpServer(monListen.host, monListen.port, new Map([['/ready', readyHandler], ['/metrics', metricsHandler], ...debug]), log, 'monitoring');
  http.push(monServer.server);

  await source.start(store);
  xds.start();
  store.onChange((events) => {
    xds.configUpdate(pushRequest({
      full: true,
      configsUpdated: events.map((e) => configKeyString(e.key)),
      reason: 'config',
      start: performance.timeOrigin + performance.now(),
    }));
  });

  const grpcServer = new grpc.Server({
    'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
    'grpc.max_concurrent_streams': 100_000,
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  grpcServer.addService(adsServiceDefinition, { StreamAggregatedResources: xds.handleStream });
  const grpcListen = parseListenAddress(opts.grpcAddr, '--grpcAddr');
  const grpcPort = await new Promise<number>((resolve, reject) => {
    const host = grpcListen.host.includes(':') ? `[${grpcListen.host}]` : grpcListen.host;
    grpcServer.bindAsync(`${host}:${grpcListen.port}`, grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
  const grpcAddress = `${grpcListen.host}:${grpcPort}`;
  log.info('grpc listening', { addr: grpcAddress, services: ['envoy.service.discovery.v3.AggregatedDiscoveryService'] });
  ready = true;
  log.info('ready', { configs: store.snapshot().list('ServiceEntry').length + store.snapshot().list('VirtualService').length, pushVersion: xds.push().version });

  return {
    grpcAddress,
    httpAddress: httpServer.address,
    monitoringAddress: monServer.address,
    xds,
    store,
    async stop() {
      ready = false;
      await source.stop();
      await xds.stop();
      await new Promise<void>((resolve) => grpcServer.tryShutdown(() => resolve()));
      await Promise.all(http.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
