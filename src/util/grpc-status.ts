/** gRPC status code names → numbers (grpc-js's `status` enum has the same values; Istio's `abort.grpcStatus` uses the names). */
export const GRPC_STATUS_CODES = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

export type GrpcStatusName = keyof typeof GRPC_STATUS_CODES;

/** Whether `name` is a gRPC status code name (upper case, as Istio spells them). */
export function isGrpcStatusName(name: string): name is GrpcStatusName {
  return Object.hasOwn(GRPC_STATUS_CODES, name);
}
