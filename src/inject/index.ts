/** Public surface of src/inject: sidecar injection for the /inject webhook and meshctl kube-inject. */
export { injectionHandler } from './handler.js';
export { kubeInject } from './kube-inject.js';
export { proxyConfigFor, type InjectionConfig } from './inject.js';
export { injectorSnapshot, type InjectorSnapshot } from './injector-source.js';
export { builtinInjector, parseInjectorConfig, parseInjectorValues, type Values } from './config.js';
export { defaultMeshConfig, meshConfigFromYaml } from './mesh.js';
export { GoStruct, k8sView, protoView } from './go-view.js';
export { type ProxyConfigSource } from './proxy-config.js';
export { CompiledTemplates, imageUrl } from './render.js';
export { POD_MERGE_KEYS, strategicMerge } from './strategic-merge.js';
export { annotationValueProblem } from './validate.js';
