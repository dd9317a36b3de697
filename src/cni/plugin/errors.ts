/**
 * CNI errors (spec 1.0.0 "Error"): a JSON object on stdout and a non-zero exit. Codes 1-99 are the
 * spec's well-known ones; 100+ are the plugin's own.
 */

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

export class CniError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details = '',
  ) {
    super(message);
    this.name = 'CniError';
  }
}

/** The spec's error object; cniVersion is the request's when it was readable. */
export function formatCniError(err: CniError, cniVersion = CNI_VERSION): string {
  return `${JSON.stringify({ cniVersion, code: err.code, msg: err.message, details: err.details })}\n`;
}
