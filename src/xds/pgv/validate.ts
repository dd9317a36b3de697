import type { DescMessage, MessageShape, Registry } from '@bufbuild/protobuf';
import { ValidationRun, type PgvViolation, type ValidateOptions } from './report.js';
import { visitMessage } from './walk.js';

/**
 * Validates `message` (of `schema`) and everything nested in it against the protoc-gen-validate
 * rules in its descriptors, unpacking every google.protobuf.Any through `registry`. Reports every
 * violation (PGV's ValidateAll), in field order. Throws only for broken rule descriptors (a rule
 * of the wrong type for its field, a pattern that is not RE2).
 */
export function validateMessage<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
  registry: Registry,
  options: ValidateOptions = {},
): PgvViolation[] {
  const run = new ValidationRun(registry, options);
  visitMessage(schema, message, undefined, run);
  return run.violations;
}

/** One line per violation: `path: message [rule]`. */
export function formatViolations(violations: readonly PgvViolation[]): string {
  return violations.map((v) => `${v.path || '(root)'}: ${v.message} [${v.rule}]`).join('\n');
}

/** For tests of other modules: throws an Error listing every violation, naming the message type. */
export function assertValid<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
  registry: Registry,
  options: ValidateOptions = {},
): void {
  const violations = validateMessage(schema, message, registry, options);
  if (violations.length === 0) return;
  throw new Error(`${schema.typeName} breaks ${violations.length} validate rule(s):\n${formatViolations(violations)}`);
}
