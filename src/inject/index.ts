/** Public surface of src/inject: sidecar injection for the /inject webhook and meshctl kube-inject. */
export { injectionHandler, injectEnvsFromPath, type InjectionOptions } from './handler.js';
export { kubeInject, type KubeInjectResult } from './kube-inject.js';
export { injectPod, decide, deployMetaFromPod, proxyConfigFor, type InjectionConfig, type InjectResult } from './inject.js';
export { InjectorSource, injectorSnapshot, INJECTOR_CONFIGMAP, type InjectorSnapshot } from './injector-source.js';
export { KubeInjectionInputs, nativeSidecarsFor, type KubeInjectionInputsOptions, type NativeSidecarMode } from './kube-inputs.js';
export { builtinInjector, parseInjectorConfig, parseInjectorValues, type InjectorConfig, type Values } from './config.js';
export { defaultMeshConfig, defaultProxyConfig, meshConfigFromYaml, mergeProxyConfig } from './mesh.js';
export { injectRequired, webhookSelects, IGNORED_NAMESPACES, type Decision } from './policy.js';
export { createJsonPatch } from './json-patch.js';
