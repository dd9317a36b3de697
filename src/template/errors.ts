import { MeshError } from '../util/errors.js';

/**
 * A parse or execution error of a template. The message follows Go's text/template wording:
 * `template: <name>:<line>: ...` for parse errors and
 * `template: <name>:<line>:<col>: executing "<tmpl>" at <<node>>: ...` for execution errors.
 */
export class TemplateError extends MeshError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'TemplateError';
  }
}

/** Thrown by functions (builtins, sprig, custom) to report `error calling <fn>: <message>`. */
export class FuncError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FuncError';
  }
}

/** A resource limit (template depth, output size) was hit: reported as is, not wrapped per call level. */
export class TemplateLimitError extends TemplateError {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}
