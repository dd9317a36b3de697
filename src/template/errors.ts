import { MeshError } from '../util/errors.js';

/**
 * A parse or execution error of a template. The message follows Go's text/template wording:
 * `template: <name>:<line>: ...` for parse errors and
 * `template: <name>:<line>:<col>: executing "<tmpl>" at <<node>>: ...` for execution errors.
 */
export class TemplateError extends MeshError {
  /**
   * Set when the error comes from Helm's `required` or `fail` (however deeply included): the
   * chart author's message, which Helm prints as `execution error at (<location>): <message>`.
   */
  readonly userMessage: string | undefined;
  /** `name:line:col` (or `name:line` for parse errors) of the outermost failing node, if known. */
  readonly location: string | undefined;

  constructor(message: string, options?: { cause?: unknown; userMessage?: string | undefined; location?: string | undefined }) {
    super('INVALID_ARGUMENT', message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TemplateError';
    this.userMessage = options?.userMessage;
    this.location = options?.location;
  }
}

/** Thrown by functions (builtins, sprig, custom) to report `error calling <fn>: <message>`. */
export class FuncError extends MeshError {
  /** True for Helm's required/fail: the message is the chart author's own. */
  readonly userFacing: boolean;
  constructor(message: string, userFacing = false) {
    super('INVALID_ARGUMENT', message);
    this.name = 'FuncError';
    this.userFacing = userFacing;
  }
}

/** A resource limit (template depth, output size) was hit: reported as is, not wrapped per call level. */
export class TemplateLimitError extends TemplateError {
  constructor(message: string, location?: string) {
    super(message, { location });
    this.name = 'TemplateError';
  }
}
