export {
  validateObject,
  validateObjectWithWarnings,
  type Validated,
  salvageObject,
  readKey,
  DEFAULT_NAMESPACE,
  type RawObject,
  type ValidateOptions,
} from './validate-object.js';
export { checkRegex } from './common.js';
