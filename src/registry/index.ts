export type { Endpoint, Locality, Protocol, RegistrySnapshot, Resolution, Service, ServicePort } from './model.js';
export { buildServiceEntryRegistry, parseLocality, parseProtocol } from './service-entry-registry.js';
