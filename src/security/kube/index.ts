/** The public surface of src/security: what other folders import (SURFACE in scripts/layers.ts). */
export { syncCaSecret } from './ca-secret.js';
export { rootCertPublisherTask } from './root-cert-publisher.js';
export { kubeTokenReviewer } from './token-reviewer.js';
