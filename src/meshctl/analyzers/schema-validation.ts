/**
 * IST0106: every document the server's validator rejects, one message per problem (istioctl
 * reports each error of a multierror). IST0133: each warning of the validator (a deprecated field,
 * a setting without effect), for valid and rejected documents alike, as istioctl's
 * schema.ValidationAnalyzer reports both from one validation.
 */
import type { ConfigError } from '../../config/index.js';
import { MSG, type MessageType } from '../analyze/messages.js';
import type { Analyzer, Report, ResourceRef } from '../analyze/model.js';

/** At the field's line (the loader points each problem there), as istioctl's ErrorLine. */
function reportEach(report: Report, type: MessageType, ref: ResourceRef, problems: readonly ConfigError[]): void {
  for (const e of problems) {
    const line = e.origin.file === ref.origin?.file ? e.origin.line : undefined;
    report({
      type,
      resource: ref,
      args: [e.path ? `${e.path}: ${e.message}` : e.message],
      ...(line !== undefined ? { line } : {}),
    });
  }
}

export const schemaValidationAnalyzer: Analyzer = {
  name: 'schema.ValidationAnalyzer',
  description: 'Runs schema validation as an analyzer and reports any violations',
  messages: [MSG.SchemaValidationError, MSG.SchemaWarning],
  analyze(s, report) {
    for (const obj of s.invalid) reportEach(report, MSG.SchemaValidationError, obj.ref, obj.errors);
    for (const obj of s.warnings) reportEach(report, MSG.SchemaWarning, obj.ref, obj.warnings);
  },
};
