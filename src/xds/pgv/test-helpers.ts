import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { envoyValidationRegistry } from '../../model/index.js';
import type { PgvViolation, ValidateOptions } from './report.js';
import { validateMessage } from './validate.js';

const registry = envoyValidationRegistry();

/** Violations as `path rule` lines: short to assert on, and a failed assertion shows all of them. */
export function brokenRules<D extends DescMessage>(schema: D, message: MessageShape<D>, options: ValidateOptions = {}): string[] {
  return validateMessage(schema, message, registry, options).map((v) => `${v.path} ${v.rule}`);
}

export function violationsOf<D extends DescMessage>(schema: D, message: MessageShape<D>, options: ValidateOptions = {}): PgvViolation[] {
  return validateMessage(schema, message, registry, options);
}
