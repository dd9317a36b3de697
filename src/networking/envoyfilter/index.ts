/** EnvoyFilter (networking.istio.io/v1alpha3): patches applied to generated Envoy config as istiod applies them. */
export { patchClusterResources, patchListenerResources, patchRouteResources, type PatchedList, type PatchProblem } from './apply.js';
export { insertedExtensionConfigs, patchBootstrap } from './extension-patch.js';
export { envoyFilterEcdsSource, withEnvoyFilters } from './generators.js';
