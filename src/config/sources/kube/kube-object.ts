/** The Kubernetes object types live with the client (src/kube); re-exported for this folder's modules. */
export type { KubeJsonObject, KubeMetadata, KubeObject } from '../../../kube/index.js';
