/** Public surface of src/webhooks: the admission seam, the HTTPS server, /validate and the caBundle patcher. */
export type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from './admission.js';
export {
  MAX_ADMISSION_BODY_BYTES,
  WebhookServer,
  routeOf,
  type PathAdmissionHandler,
  type ServingIdentity,
  type WebhookHandlers,
  type WebhookServerOptions,
} from './server.js';
export {
  ADMISSION_API_VERSIONS,
  decodeAdmissionReview,
  encodeAdmissionReview,
  type AdmissionApiVersion,
  type DecodedReview,
} from './review.js';
export { formatValidationErrors, validationHandler, type ValidationHandlerOptions } from './validation.js';
export {
  INJECTION_WEBHOOK_SUFFIX,
  caBundlePatch,
  failsOpen,
  isOurs,
  webhookCaBundleTask,
  type CaBundlePatcherOptions,
  type CaBundleTarget,
  type FailCloseProbe,
  type WebhookConfiguration,
  type WebhookConfigurationKind,
} from './ca-bundle-patcher.js';
export { dryRunInvalidGatewayProbe } from './fail-close-probe.js';
