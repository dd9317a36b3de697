/** IST0106: every document the server's validator rejects, one message per problem (istioctl reports each error of a multierror). */
import { MSG } from '../analyze/messages.js';
import type { Analyzer } from '../analyze/model.js';

export const schemaValidationAnalyzer: Analyzer = {
  name: 'schema.ValidationAnalyzer',
  description: 'Runs schema validation as an analyzer and reports any violations',
  messages: [MSG.SchemaValidationError],
  analyze(s, report) {
    for (const obj of s.invalid) {
      for (const e of obj.errors) {
        // At the field's line (the loader points each error there), as istioctl's ErrorLine.
        const line = e.origin.file === obj.ref.origin?.file ? e.origin.line : undefined;
        report({
          type: MSG.SchemaValidationError,
          resource: obj.ref,
          args: [e.path ? `${e.path}: ${e.message}` : e.message],
          ...(line !== undefined ? { line } : {}),
        });
      }
    }
  },
};
