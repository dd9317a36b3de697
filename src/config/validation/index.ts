export { validateObject, readKey, DEFAULT_NAMESPACE, type RawObject, type ValidateOptions } from './validate-object.js';
export { checkRegex } from './common.js';
