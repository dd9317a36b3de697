/**
 * The xDS debug client istioctl uses: one ADS stream to the control plane, one request for a debug
 * type URL (istio.io/debug/syncz, istio.io/debug/config_dump with a proxy ID), the first response
 * of that type, then the stream is closed. Plaintext by default (meshpilot's 15010); TLS with the
 * mesh root, and a bearer token or a client certificate, when asked.
 */
import { randomBytes } from 'node:crypto';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { controlPlaneChannel } from '../../agent/index.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../../config/constants.js';
import { MeshError } from '../../util/errors.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
export const SYNCZ_TYPE = 'istio.io/debug/syncz';
export const CONFIG_DUMP_TYPE = 'istio.io/debug/config_dump';

export interface XdsTls {
  readonly rootCertPem: string;
  /** Name the server certificate must carry (default istiod.istio-system.svc). */
  readonly serverName?: string;
  readonly clientCertChainPem?: string;
  readonly clientKeyPem?: string;
}

export interface XdsDebugOptions {
  /** host:port of the control plane's ADS server. */
  readonly address: string;
  readonly tls?: XdsTls;
  /** Sent as `authorization: Bearer <token>` (TLS only, as istiod requires). */
  readonly token?: string;
  /** How long to wait for the answer (default 10 s). */
  readonly timeoutMs?: number;
}

/** The node id this client connects with; proxy-status leaves it out of its rows. */
export function debugNodeId(): string {
  return `sidecar~0.0.0.0~meshctl-${randomBytes(4).toString('hex')}.istio-system~istio-system.svc.cluster.local`;
}

/** One debug request; resolves with the first response of `typeUrl`, rejects with a one-line reason. */
export function xdsDebugRequest(
  opts: XdsDebugOptions,
  typeUrl: string,
  resourceNames: readonly string[],
  nodeId = debugNodeId(),
): Promise<DiscoveryResponse> {
  const { credentials, options } = opts.tls
    ? controlPlaneChannel({
        rootCertPem: opts.tls.rootCertPem,
        serverName: opts.tls.serverName ?? 'istiod.istio-system.svc',
        ...(opts.tls.clientCertChainPem !== undefined ? { clientCertChainPem: opts.tls.clientCertChainPem } : {}),
        ...(opts.tls.clientKeyPem !== undefined ? { clientKeyPem: opts.tls.clientKeyPem } : {}),
      })
    : { credentials: grpc.credentials.createInsecure(), options: {} };
  const client = new grpc.Client(opts.address, credentials, options);
  const md = new grpc.Metadata();
  if (opts.token !== undefined) md.set('authorization', `Bearer ${opts.token}`);
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (req) => Buffer.from(toBinary(DiscoveryRequestSchema, req)),
    (buf) => fromBinary(DiscoveryResponseSchema, buf),
    md,
  );
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return new Promise<DiscoveryResponse>((resolve, reject) => {
    let done = false;
    const finish = (err: Error | undefined, resp?: DiscoveryResponse): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      call.removeAllListeners('data');
      call.on('error', () => undefined); // the cancel below reports CANCELLED; nobody listens any more
      call.cancel();
      client.close();
      if (err) reject(err);
      else if (resp) resolve(resp);
    };
    const timer = setTimeout(
      () =>
        finish(
          new MeshError(
            'DEADLINE_EXCEEDED',
            `no ${typeUrl} answer from ${opts.address} within ${timeoutMs} ms (is meshpilot serving xDS there? see --xds-address)`,
          ),
        ),
      timeoutMs,
    );
    call.on('data', (resp: DiscoveryResponse) => {
      if (resp.typeUrl === typeUrl) finish(undefined, resp);
    });
    call.on('error', (e: grpc.ServiceError) =>
      finish(
        new MeshError(
          'UNAVAILABLE',
          `xDS request to ${opts.address} failed: ${e.details || e.message} (check --xds-address and, for TLS, --cert-dir/--token)`,
        ),
      ),
    );
    call.on('end', () => finish(new MeshError('UNAVAILABLE', `${opts.address} closed the xDS stream before answering ${typeUrl}`)));
    call.write(
      create(DiscoveryRequestSchema, {
        typeUrl,
        resourceNames: [...resourceNames],
        node: { id: nodeId, metadata: { NAMESPACE: ISTIO_SYSTEM_NAMESPACE, CLUSTER_ID: 'meshctl' }, userAgentName: 'meshctl' },
      }),
    );
  });
}

/** istioctl's CpInfo: the ID in the response's control_plane.identifier JSON, if any. */
export function controlPlaneId(resp: DiscoveryResponse): string | undefined {
  const ident = resp.controlPlane?.identifier;
  if (!ident) return undefined;
  try {
    const parsed = JSON.parse(ident) as { ID?: unknown };
    return typeof parsed.ID === 'string' && parsed.ID !== '' ? parsed.ID : undefined;
  } catch {
    return undefined;
  }
}
