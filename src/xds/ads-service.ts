import type * as grpc from '@grpc/grpc-js';
import { type DeltaDiscoveryRequest, type DiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';
import { decodeDeltaDiscoveryRequest, decodeDiscoveryRequest, DecodedByBytes, NameListMemo } from './request-decode.js';
import { installSharedBlockWrites } from './grpc-parts.js';
import type { WireMessage } from './wire-message.js';

export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const DELTA_ADS_PATH = `/${ADS_SERVICE}/DeltaAggregatedResources`;

/** Subscription lists of SotW ACKs, shared by every stream of the process (bounded). */
const sotwNameLists = new NameListMemo({ maxBytes: 8 * 1024 * 1024 });
/** The same for Delta subscriptions. */
const deltaNameLists = new NameListMemo({ maxBytes: 8 * 1024 * 1024 });
/** The nodes of clients that repeat theirs on every request (SotW and Delta). */
const nodes = new DecodedByBytes<Node>({ maxBytes: 4 * 1024 * 1024, minBytes: 0 });

/**
 * A response as grpc-js frames it: grpc-js reads only `byteLength` and `copy(frame, 5)` of what
 * the serializer returns (server-interceptors' serializeMessage), which a WireMessage provides, so
 * a response is laid out once, in the frame. Checked against the pinned grpc-js by
 * ads-service.test.ts (a real server and client).
 */
const asFrameSource = (m: WireMessage): Buffer => m as unknown as Buffer;

/**
 * grpc-js service definition for SotW ADS. Responses are written pre-encoded (marshal-once), so
 * the response serializer only hands them to the framing; requests decode with protobuf-es.
 */
export const adsServiceDefinition = {
  StreamAggregatedResources: {
    path: `/${ADS_SERVICE}/StreamAggregatedResources`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (): Buffer => {
      throw new Error('server-side definition: requests are never serialized here');
    },
    requestDeserialize: (b: Buffer): DiscoveryRequest => decodeDiscoveryRequest(b, sotwNameLists, nodes),
    responseSerialize: asFrameSource,
    responseDeserialize: (b: Buffer): WireMessage => b,
  },
  DeltaAggregatedResources: {
    path: DELTA_ADS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (): Buffer => {
      throw new Error('server-side definition: requests are never serialized here');
    },
    requestDeserialize: (b: Buffer): DeltaDiscoveryRequest => decodeDeltaDiscoveryRequest(b, deltaNameLists, nodes),
    responseSerialize: asFrameSource,
    responseDeserialize: (b: Buffer): WireMessage => b,
  },
} satisfies grpc.ServiceDefinition;

export type AdsStream = grpc.ServerDuplexStream<DiscoveryRequest, WireMessage>;
export type DeltaAdsStream = grpc.ServerDuplexStream<DeltaDiscoveryRequest, WireMessage>;

/**
 * The two ADS methods of one DiscoveryServer, for grpc.Server.addService. Responses built of
 * shared blocks are written by reference from here on (see grpc-parts.ts).
 */
export function adsImplementation(xds: {
  handleStream: (call: AdsStream) => void;
  handleDeltaStream: (call: DeltaAdsStream) => void;
}): grpc.UntypedServiceImplementation {
  installSharedBlockWrites();
  return { StreamAggregatedResources: xds.handleStream, DeltaAggregatedResources: xds.handleDeltaStream };
}
