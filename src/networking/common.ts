import { GRPC_STATUS_CODES, isGrpcStatusName } from '../util/grpc-status.js';
import { create, type DescMessage, type MessageShape, type MessageInitShape } from '@bufbuild/protobuf';
import { anyPack, type Any, type Duration, DurationSchema } from '@bufbuild/protobuf/wkt';
import type { ConfigSource } from '../gen/envoy/config/core/v3/config_source_pb.js';
import { ApiVersion, ConfigSourceSchema } from '../gen/envoy/config/core/v3/config_source_pb.js';
import { FractionalPercent_DenominatorType, type FractionalPercent } from '../gen/envoy/type/v3/percent_pb.js';
import { FractionalPercentSchema } from '../gen/envoy/type/v3/percent_pb.js';

/** The plain-object form of a message's init shape (no `$typeName`), for building messages in pieces. */
export type Init<D extends DescMessage> = Exclude<MessageInitShape<D>, MessageShape<D>>;

/** `create` + `anyPack` in one step. */
export function packAny<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Any {
  return anyPack(schema, create(schema, init) as MessageShape<D>);
}

export function durationFromMs(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return create(DurationSchema, { seconds: BigInt(seconds), nanos: Math.round((ms - seconds * 1000) * 1e6) });
}

export function durationToMs(d: Duration): number {
  return Number(d.seconds) * 1000 + d.nanos / 1e6;
}

/** `{ads: {}, resourceApiVersion: V3}`: every dynamic resource comes back over the same ADS stream. */
export function adsConfigSource(): ConfigSource {
  return create(ConfigSourceSchema, { configSourceSpecifier: { case: 'ads', value: {} }, resourceApiVersion: ApiVersion.V3 });
}

/** Istio's Percent (0..100, fractional) as Envoy's FractionalPercent in millionths, as istiod does. */
export function fractionalPercent(percent: number): FractionalPercent {
  return create(FractionalPercentSchema, {
    numerator: Math.round(percent * 10_000),
    denominator: FractionalPercent_DenominatorType.MILLION,
  });
}

/** A gRPC status given by name or number; undefined when neither. */
export function parseGrpcStatus(s: string): number | undefined {
  const name = s.toUpperCase();
  if (isGrpcStatusName(name)) return GRPC_STATUS_CODES[name];
  const n = Number(s);
  return Number.isInteger(n) && n >= 0 && n <= 16 ? n : undefined;
}
