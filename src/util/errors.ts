/**
 * The one error base of meshpilot: {@link MeshError}, a message with an {@link ErrorCode}. Every
 * error class of the project extends it with its code. Codes are turned into a gRPC status, an
 * HTTP status or an exit code only at the edge that answers a client, each edge with one mapping
 * function: {@link grpcStatus} of {@link errorCodeOf} (gRPC servers), {@link errorCodeOfGrpcStatus}
 * (gRPC clients), {@link errorCodeOfHttpStatus} (HTTP clients); the webhook server and the
 * command lines map their own (webhooks/server.ts `httpStatusOf`, the catch of meshctl/cli.ts,
 * the CNI plugin's error object, cni/iptables-command.ts).
 */

/** Error codes used across meshpilot, named as gRPC's status codes. */
import { GRPC_STATUS_CODES } from './grpc-status.js';
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'ABORTED'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'RESOURCE_EXHAUSTED'
  | 'DEADLINE_EXCEEDED'
  | 'UNAVAILABLE'
  | 'INTERNAL';

/** The base of every meshpilot error: a code, a message and an optional cause. */
export class MeshError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'MeshError';
  }
}

/** The code of any thrown value: a MeshError's own, INTERNAL for everything else. */
export function errorCodeOf(err: unknown): ErrorCode {
  return err instanceof MeshError ? err.code : 'INTERNAL';
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The gRPC status of a code. */
export function grpcStatus(code: ErrorCode): number {
  return GRPC_STATUS_CODES[code];
}

/**
 * The code of a gRPC status a client received: the caller's own mistakes keep their code;
 * everything else (no answer, the server's trouble) is UNAVAILABLE, worth retrying.
 */
export function errorCodeOfGrpcStatus(status: number | undefined): ErrorCode {
  switch (status) {
    case GRPC_STATUS_CODES.UNAUTHENTICATED:
      return 'UNAUTHENTICATED';
    case GRPC_STATUS_CODES.PERMISSION_DENIED:
      return 'PERMISSION_DENIED';
    case GRPC_STATUS_CODES.INVALID_ARGUMENT:
      return 'INVALID_ARGUMENT';
    case GRPC_STATUS_CODES.RESOURCE_EXHAUSTED:
      return 'RESOURCE_EXHAUSTED';
    default:
      return 'UNAVAILABLE';
  }
}

/** The code of an HTTP status a client received (as google.rpc maps them). */
export function errorCodeOfHttpStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
    case 422:
      return 'INVALID_ARGUMENT';
    case 401:
      return 'UNAUTHENTICATED';
    case 403:
      return 'PERMISSION_DENIED';
    case 404:
      return 'NOT_FOUND';
    case 409:
      return 'ABORTED';
    case 412:
      return 'FAILED_PRECONDITION';
    case 413:
    case 429:
      return 'RESOURCE_EXHAUSTED';
    case 502:
    case 503:
      return 'UNAVAILABLE';
    case 504:
      return 'DEADLINE_EXCEEDED';
    default:
      return status >= 400 && status < 500 ? 'FAILED_PRECONDITION' : 'INTERNAL';
  }
}
