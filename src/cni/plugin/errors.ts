/**
 * CNI errors (spec 1.0.0 "Error"): a JSON object on stdout and a non-zero exit. Codes 1-99 are the
 * spec's well-known ones; 100+ are the plugin's own.
 */
import { MeshError, type ErrorCode } from '../../util/errors.js';

export const CNI_VERSION = '1.0.0';
/** CHECK exists from 0.4.0; older runtimes still get ADD/DEL with prevResult passed through. */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] as const;

export const CniCode = {
  INCOMPATIBLE_VERSION: 1,
  UNSUPPORTED_FIELD: 2,
  CONTAINER_UNKNOWN: 3,
  INVALID_ENV: 4,
  IO_FAILURE: 5,
  DECODE_FAILURE: 6,
  INVALID_NETWORK_CONFIG: 7,
  TRY_AGAIN_LATER: 11,
  /** Ours: the pod could not be read from the Kubernetes API. */
  POD_LOOKUP_FAILED: 100,
  /** Ours: a pod annotation (or sidecar env) gives an invalid capture setting. */
  INVALID_POD_CONFIG: 101,
  /** Ours: programming (or checking) iptables in the pod's namespace failed. */
  CAPTURE_FAILED: 102,
} as const;

/** The meshpilot code of a CNI error code. */
function errorCodeOfCni(cniCode: number): ErrorCode {
  switch (cniCode) {
    case CniCode.CONTAINER_UNKNOWN:
      return 'NOT_FOUND';
    case CniCode.TRY_AGAIN_LATER:
    case CniCode.POD_LOOKUP_FAILED:
      return 'UNAVAILABLE';
    case CniCode.IO_FAILURE:
    case CniCode.CAPTURE_FAILED:
      return 'INTERNAL';
    default:
      return 'INVALID_ARGUMENT';
  }
}

/** A CNI error: `cniCode` is the spec's (or the plugin's own) number, written on stdout. */
export class CniError extends MeshError {
  constructor(
    readonly cniCode: number,
    message: string,
    readonly details = '',
  ) {
    super(errorCodeOfCni(cniCode), message);
    this.name = 'CniError';
  }
}

/** The spec's error object; cniVersion is the request's when it was readable. */
export function formatCniError(err: CniError, cniVersion = CNI_VERSION): string {
  return `${JSON.stringify({ cniVersion, code: err.cniCode, msg: err.message, details: err.details })}\n`;
}
