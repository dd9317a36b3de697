/** Public surface of the config domain: kinds, validation, parsing, the store and its sources. */
export {
  configKeyString,
  formatConfigError,
  keyOf,
  type Config,
  type ConfigError,
  type ConfigKey,
  type ConfigMeta,
  type ConfigOrigin,
} from './config.js';
export { KINDS, KIND_NAMES, lookupKind, type KindInfo, type KindName, type SpecByKind } from './kinds.js';
export type { ConfigChange, ConfigEvent, ConfigSink, ConfigSnapshot, ConfigSource } from './store-types.js';
export { parseConfigFile, type ParseOptions, type ParsedDocument, type ParsedFile } from './parse.js';
export { DEFAULT_PARSE_LIMITS, type ParseLimits } from './parse-limits.js';
export { validateObject, readKey, checkRegex, DEFAULT_NAMESPACE, type RawObject, type ValidateOptions } from './validation/index.js';
export { ConfigStore, type ConfigListener, type ConfigStoreOptions, type ConfigStoreSnapshot } from './store.js';
export { FileSource, type FileSourceOptions } from './sources/file-source.js';
export { MemorySource, type MemorySourceOptions } from './sources/memory-source.js';
