import { fromBinary } from '@bufbuild/protobuf';
import type * as grpc from '@grpc/grpc-js';
import {
  DeltaDiscoveryRequestSchema,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { decodeDiscoveryRequest, NameListMemo } from './request-decode.js';

export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const DELTA_ADS_PATH = `/${ADS_SERVICE}/DeltaAggregatedResources`;

/** Subscription lists of SotW ACKs, shared by every stream of the process (bounded). */
const sotwNameLists = new NameListMemo({ maxBytes: 8 * 1024 * 1024 });

/**
 * grpc-js service definition for SotW ADS. Responses are written pre-encoded (marshal-once), so
 * the response serializer only wraps the bytes; requests decode with protobuf-es.
 */
export const adsServiceDefinition = {
  StreamAggregatedResources: {
    path: `/${ADS_SERVICE}/StreamAggregatedResources`,
    requestStream: true,
    responseStream: true,
    requestSerialize: (): Buffer => {
      throw new Error('server-side definition: requests are never serialized here');
    },
    requestDeserialize: (b: Buffer): DiscoveryRequest => decodeDiscoveryRequest(b, sotwNameLists),
    responseSerialize: (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    responseDeserialize: (b: Buffer): Uint8Array => b,
  },
  DeltaAggregatedResources: {
    path: DELTA_ADS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (): Buffer => {
      throw new Error('server-side definition: requests are never serialized here');
    },
    requestDeserialize: (b: Buffer): DeltaDiscoveryRequest => fromBinary(DeltaDiscoveryRequestSchema, b),
    responseSerialize: (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    responseDeserialize: (b: Buffer): Uint8Array => b,
  },
} satisfies grpc.ServiceDefinition;

export type AdsStream = grpc.ServerDuplexStream<DiscoveryRequest, Uint8Array>;
export type DeltaAdsStream = grpc.ServerDuplexStream<DeltaDiscoveryRequest, Uint8Array>;

/** The two ADS methods of one DiscoveryServer, for grpc.Server.addService. */
export function adsImplementation(xds: { handleStream: (call: AdsStream) => void; handleDeltaStream: (call: DeltaAdsStream) => void }): grpc.UntypedServiceImplementation {
  return { StreamAggregatedResources: xds.handleStream, DeltaAggregatedResources: xds.handleDeltaStream };
}
