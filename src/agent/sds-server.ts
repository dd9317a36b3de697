/**
 * The agent's SDS server for Envoy (envoy.service.secret.v3.SecretDiscoveryService, SotW
 * StreamSecrets) on a Unix socket: `default` (tls_certificate: chain + key) and `ROOTCA`
 * (validation_context.trusted_ca), inline, as Istio's agent serves them; every stream gets the new
 * secrets when the certificate rotates. The socket is made 0600: it hands out the private key.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { SecretSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { packAny } from '../networking/common.js';
import { SDS_DEFAULT, SDS_ROOT_CA } from '../networking/secret/sds-config.js';
import { TypeUrl } from '../xds/type-urls.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { SecretListener, WorkloadSecret } from './cert-manager.js';

export const SDS_SERVICE = 'envoy.service.secret.v3.SecretDiscoveryService';

const encReq = (m: DiscoveryRequest): Buffer => Buffer.from(toBinary(DiscoveryRequestSchema, m));
const decReq = (b: Buffer): DiscoveryRequest => fromBinary(DiscoveryRequestSchema, b);
const encRes = (m: DiscoveryResponse): Buffer => Buffer.from(toBinary(DiscoveryResponseSchema, m));
const decRes = (b: Buffer): DiscoveryResponse => fromBinary(DiscoveryResponseSchema, b);

/**
 * grpc-js definition of the SDS service (its messages are the generated DiscoveryRequest/Response;
 * sds.proto itself only declares the service). Usable by clients too (makeGenericClientConstructor).
 */
export const sdsServiceDefinition = {
  StreamSecrets: {
    path: `/${SDS_SERVICE}/StreamSecrets`,
    requestStream: true,
    responseStream: true,
    requestSerialize: encReq,
    requestDeserialize: decReq,
    responseSerialize: encRes,
    responseDeserialize: decRes,
  },
  FetchSecrets: {
    path: `/${SDS_SERVICE}/FetchSecrets`,
    requestStream: false,
    responseStream: false,
    requestSerialize: encReq,
    requestDeserialize: decReq,
    responseSerialize: encRes,
    responseDeserialize: decRes,
  },
} satisfies grpc.ServiceDefinition;

const KNOWN = new Set([SDS_DEFAULT, SDS_ROOT_CA]);

/** The Secret resources for `names` (unknown names are left out), packed for a DiscoveryResponse. */
export function secretResources(secret: WorkloadSecret, names: Iterable<string>): ReturnType<typeof packAny>[] {
  const out: ReturnType<typeof packAny>[] = [];
  for (const name of names) {
    if (name === SDS_DEFAULT) {
      out.push(
        packAny(SecretSchema, {
          name,
          type: {
            case: 'tlsCertificate',
            value: {
              certificateChain: { specifier: { case: 'inlineBytes', value: Buffer.from(secret.certChainPem) } },
              privateKey: { specifier: { case: 'inlineBytes', value: Buffer.from(secret.privateKeyPem) } },
            },
          },
        }),
      );
    } else if (name === SDS_ROOT_CA) {
      out.push(
        packAny(SecretSchema, {
          name,
          type: {
            case: 'validationContext',
            value: { trustedCa: { specifier: { case: 'inlineBytes', value: Buffer.from(secret.rootCertPem) } } },
          },
        }),
      );
    }
  }
  return out;
}

export interface SecretSource {
  current(): WorkloadSecret | undefined;
  onUpdate(listener: SecretListener): () => void;
}

export interface SdsServer {
  /** Streams currently open. */
  streams(): number;
  stop(): Promise<void>;
}

interface Stream {
  readonly call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  names: Set<string>;
  nonce: string;
  node: string;
}

/** Binds `unix:<socketPath>` (replacing a stale socket) and serves secrets from `source`. */
export async function startSdsServer(socketPath: string, source: SecretSource, log: Logger): Promise<SdsServer> {
  const abs = path.resolve(socketPath);
  const streams = new Set<Stream>();

  const send = (s: Stream, secret: WorkloadSecret): void => {
    const resources = secretResources(secret, s.names);
    if (resources.length === 0) return;
    s.nonce = randomUUID();
    s.call.write(
      create(DiscoveryResponseSchema, { versionInfo: String(secret.version), typeUrl: TypeUrl.Secret, nonce: s.nonce, resources }),
    );
    log.debug('SDS push', { node: s.node, names: [...s.names], version: secret.version });
  };

  const onRequest = (s: Stream, req: DiscoveryRequest): void => {
    if (req.node?.id) s.node = req.node.id;
    if (req.responseNonce !== '' && req.responseNonce !== s.nonce) return; // stale: superseded by a newer response
    if (req.errorDetail)
      log.warn('SDS NACK', { node: s.node, names: req.resourceNames, version: req.versionInfo, error: req.errorDetail.message });
    else if (req.responseNonce !== '') log.debug('SDS ACK', { node: s.node, names: req.resourceNames, version: req.versionInfo });
    const names = new Set(req.resourceNames);
    const unknown = [...names].filter((n) => !KNOWN.has(n));
    if (unknown.length > 0)
      log.warn('SDS request for unknown secrets (only default and ROOTCA are served)', { node: s.node, names: unknown });
    const changed = names.size !== s.names.size || [...names].some((n) => !s.names.has(n));
    s.names = names;
    // A first request, or a change of names, wants a response; a plain ACK does not.
    const cur = source.current();
    if (cur && (req.responseNonce === '' || changed)) send(s, cur);
  };

  const server = new grpc.Server();
  server.addService(sdsServiceDefinition, {
    StreamSecrets: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
      const s: Stream = { call, names: new Set(), nonce: '', node: '' };
      streams.add(s);
      call.on('data', (req: DiscoveryRequest) => {
        try {
          onRequest(s, req);
        } catch (err) {
          log.error('SDS request failed', { node: s.node, error: errorMessage(err) });
        }
      });
      const done = (): void => void streams.delete(s);
      call.on('end', () => {
        done();
        call.end();
      });
      call.on('cancelled', done);
      call.on('error', done);
    },
    FetchSecrets: (call: grpc.ServerUnaryCall<DiscoveryRequest, DiscoveryResponse>, cb: grpc.sendUnaryData<DiscoveryResponse>) => {
      const cur = source.current();
      if (!cur) return cb({ code: grpc.status.UNAVAILABLE, details: 'no workload certificate yet' });
      cb(
        null,
        create(DiscoveryResponseSchema, {
          versionInfo: String(cur.version),
          typeUrl: TypeUrl.Secret,
          resources: secretResources(cur, call.request.resourceNames),
        }),
      );
    },
  });
  const unsubscribe = source.onUpdate((secret) => {
    for (const s of streams) send(s, secret);
  });

  await mkdir(path.dirname(abs), { recursive: true });
  await rm(abs, { force: true });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${abs}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  await chmod(abs, 0o600);
  log.info('SDS server listening', { socket: abs });
  return {
    streams: () => streams.size,
    async stop() {
      unsubscribe();
      for (const s of streams) s.call.end();
      await shutdownServer(server);
      await rm(abs, { force: true });
    },
  };
}

/** tryShutdown, then force after a second: a client that never half-closes must not hold up exit. */
export async function shutdownServer(server: grpc.Server, graceMs = 1000): Promise<void> {
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}
