export type { PgvViolation, ValidateOptions } from './report.js';
export { assertValid, formatViolations, validateMessage } from './validate.js';
