import { MeshError, type ErrorCode } from '../../util/errors.js';

/** istiod's CA error types (security/pkg/pki/error), used as the metrics label and for the gRPC code. */
export type CaErrorType = 'CA_NOT_READY' | 'CSR_ERROR' | 'TTL_ERROR' | 'CERT_GEN_ERROR';

const CODES: Record<CaErrorType, ErrorCode> = {
  CA_NOT_READY: 'INTERNAL',
  CSR_ERROR: 'INVALID_ARGUMENT',
  TTL_ERROR: 'INVALID_ARGUMENT',
  CERT_GEN_ERROR: 'INTERNAL',
};

/** A MeshError that also carries istiod's CA error type. */
export class CaError extends MeshError {
  readonly type: CaErrorType;

  constructor(type: CaErrorType, message: string, options?: { cause?: unknown }) {
    super(CODES[type], message, options);
    this.type = type;
    this.name = 'CaError';
  }
}
