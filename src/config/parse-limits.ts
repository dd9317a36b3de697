/**
 * Bounds on what one config file may cost to parse. The yaml package recurses per nesting
 * level: ~1000 levels exhaust the stack, and after such an overflow a later large parse can
 * abort the whole process inside V8's regexp compiler (seen with yaml 2.9 on Node 20). So
 * nesting is measured with yaml's own (non-recursive) lexer before the text is parsed.
 */
import { Lexer, parse as parseYaml } from 'yaml';
import { errorMessage, MeshError } from '../util/errors.js';

export interface ParseLimits {
  /** Largest file accepted, in bytes (default 8 MiB). */
  readonly maxFileBytes: number;
  /** YAML alias expansions per document (yaml's `maxAliasCount`; default 100). */
  readonly maxAliasCount: number;
  /** Deepest nesting of mappings and lists (default 100; Istio objects need about 15). */
  readonly maxDepth: number;
  /** Documents per file (default 10000). */
  readonly maxDocuments: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = Object.freeze({
  maxFileBytes: 8 * 1024 * 1024,
  maxAliasCount: 100,
  maxDepth: 100,
  maxDocuments: 10_000,
});

/** The error for a file over `maxFileBytes`: checked before reading it where the size is known (stat). */
export const fileTooLargeMessage = (size: number, limits: Pick<ParseLimits, 'maxFileBytes'>): string =>
  `file is ${size} bytes, larger than the limit of ${limits.maxFileBytes} bytes`;

export interface LimitViolation {
  readonly message: string;
  /** Offset in the text where the limit was crossed. */
  readonly offset: number;
}

// Lexer marker tokens that stand for no source text.
const DOC_MODE = '\x02';
const FLOW_ERROR_END = '\x18';
const SCALAR = '\x1f';

/**
 * An upper bound of nesting depth and the document count, without building anything.
 * Block nesting is tracked by indentation (a stack of open indents), compact `- - x` items per
 * line, and flow `[`/`{` depth; quoted, plain and block scalars are single tokens, so brackets
 * inside them do not count.
 */
export function checkYamlLimits(text: string, limits: ParseLimits): LimitViolation | undefined {
  let offset = 0;
  let flow = 0;
  let docs = 0;
  let docJustStarted = false;
  let atLineStart = true;
  let indent = 0;
  let lineItems = 0;
  let skipScalarBody = false;
  let blockHeaderSeen = false;
  const indents: number[] = [];

  const startContent = (): void => {
    if (!atLineStart) return;
    atLineStart = false;
    if (flow > 0) return; // indentation means nothing inside `[...]` / `{...}`
    while (indents.length > 0 && (indents[indents.length - 1] ?? 0) >= indent) indents.pop();
    indents.push(indent);
  };

  for (const tok of new Lexer().lex(text)) {
    const at = offset;
    if (tok !== DOC_MODE && tok !== FLOW_ERROR_END && tok !== SCALAR) offset += tok.length;

    if (skipScalarBody) {
      skipScalarBody = false;
      if (tok.endsWith('\n')) {
        // A block scalar body runs to the start of the next line.
        atLineStart = true;
        indent = 0;
        lineItems = 0;
      }
      continue;
    }
    const c = tok[0];
    if (tok === '\n' || tok === '\r\n' || c === '\n' || c === '\r') {
      atLineStart = true;
      indent = 0;
      lineItems = 0;
      continue;
    }
    if (c === ' ' || c === '\t') {
      if (atLineStart) indent = tok.length;
      continue;
    }
    if (c === '#') continue;
    if (tok === DOC_MODE) {
      docs++;
      docJustStarted = true;
    } else if (tok === '---') {
      if (!docJustStarted) docs++;
      docJustStarted = false;
      indents.length = 0;
      flow = 0;
    } else {
      docJustStarted = false;
    }
    if (docs > limits.maxDocuments) return { message: `more than ${limits.maxDocuments} documents in one file`, offset: at };
    if (tok === DOC_MODE || tok === FLOW_ERROR_END || tok === '---' || tok === '...') continue;

    if (tok === SCALAR) {
      skipScalarBody = true;
      if (blockHeaderSeen) {
        blockHeaderSeen = false;
        continue;
      }
      startContent();
      continue;
    }
    startContent();
    if (c === '|' || c === '>') blockHeaderSeen = true;
    else if (tok === '-' || tok === '?') lineItems++;
    else if (tok === '[' || tok === '{') flow++;
    else if ((tok === ']' || tok === '}') && flow > 0) flow--;

    if (indents.length + lineItems + flow > limits.maxDepth) {
      return { message: `nesting deeper than ${limits.maxDepth} levels`, offset: at };
    }
  }
  return undefined;
}

/** Depth of an already-parsed JSON value, iteratively (JSON.parse itself does not recurse). */
export function jsonDepthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (d >= maxDepth) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return false;
}

/** The 1-based line of a text offset. */
export function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/**
 * One YAML document read under the same limits as config files (size, nesting, documents, alias
 * expansions): for the single-document files beside them, such as a mesh config. Throws an
 * INVALID_ARGUMENT MeshError naming `file` (and the line, for a limit crossed); an empty text is null.
 * `version: '1.1'` reads scalars as Go's yaml.v2 does (the injector's config and values).
 */
export function parseBoundedYaml(
  text: string,
  file: string,
  limits: ParseLimits = DEFAULT_PARSE_LIMITS,
  opts: { readonly version?: '1.1' } = {},
): unknown {
  const size = Buffer.byteLength(text, 'utf8');
  if (size > limits.maxFileBytes) throw new MeshError('INVALID_ARGUMENT', `${file}: ${fileTooLargeMessage(size, limits)}`);
  const violation = checkYamlLimits(text, limits);
  if (violation) throw new MeshError('INVALID_ARGUMENT', `${file}:${lineOfOffset(text, violation.offset)}: ${violation.message}`);
  try {
    return parseYaml(text, { maxAliasCount: limits.maxAliasCount, ...(opts.version ? { version: opts.version } : {}) }) as unknown;
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${file}: not YAML: ${errorMessage(err).split('\n')[0] ?? ''}`);
  }
}
