import * as grpc from '@grpc/grpc-js';

/** The one method every test backend serves; request is ignored, response is JSON `WhoamiReply`. */
export const WHOAMI_PATH = '/echo.Echo/Whoami';

export interface WhoamiReply {
  /** The backend's name (v1, v2, …). */
  readonly backend: string;
  /** Request headers the backend saw (lower-case keys, first value), minus pseudo/gRPC headers. */
  readonly headers: Record<string, string>;
}

const identity = (b: Buffer): Buffer => b;

/** A service definition without a .proto: raw Buffer (de)serialisers. */
export const ECHO_SERVICE: grpc.ServiceDefinition = {
  Whoami: {
    path: WHOAMI_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export interface GrpcBackend {
  readonly name: string;
  readonly port: number;
  /** `host:port` it listens on */
  readonly address: string;
  /** RPCs this backend has answered. */
  hits(): number;
  stop(): Promise<void>;
}

/** A real gRPC server (127.0.0.1 and an ephemeral port unless told) answering Whoami with its name. */
export async function startGrpcBackend(
  name: string,
  listen: { host: string; port: number } = { host: '127.0.0.1', port: 0 },
): Promise<GrpcBackend> {
  const server = new grpc.Server();
  let hits = 0;
  const impl: grpc.UntypedServiceImplementation = {
    Whoami: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      hits++;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(call.metadata.getMap())) {
        if (!k.startsWith('grpc-') && typeof v === 'string') headers[k] = v;
      }
      const reply: WhoamiReply = { backend: name, headers };
      callback(null, Buffer.from(JSON.stringify(reply)));
    },
  };
  server.addService(ECHO_SERVICE, impl);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${listen.host}:${listen.port}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });
  let stopped: Promise<void> | undefined;
  return {
    name,
    port,
    address: `${listen.host}:${port}`,
    hits: () => hits,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return stopped;
    },
  };
}

/** Starts one backend per name (e.g. v1, v2, v3). */
export function startGrpcBackends(names: readonly string[]): Promise<GrpcBackend[]> {
  return Promise.all(names.map((n) => startGrpcBackend(n)));
}
