export { validateObject, salvageObject, readKey, DEFAULT_NAMESPACE, type RawObject, type ValidateOptions } from './validate-object.js';
export { checkRegex } from './common.js';
