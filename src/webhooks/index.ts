/**
 * Public surface of src/webhooks: the admission seam, the HTTPS server and /validate. The caBundle
 * patcher and the fail-close probe load the Kubernetes client: they are entries of their own.
 */
export type { AdmissionRequest, AdmissionResponse } from './admission.js';
export { WebhookServer, type PathAdmissionHandler, type WebhookHandlers } from './server.js';
export { validationHandler } from './validation.js';
