/**
 * Splits a config file into the documents meshpilot serves. YAML (multi-document) or JSON (one
 * object, or a `List` with `items`); every document keeps its 1-based start line. A syntax
 * error or a crossed limit fails the whole file (its documents cannot be trusted); documents of
 * kinds meshpilot does not serve are skipped with a debug note.
 */
import { LineCounter, parseAllDocuments, parseDocument, isMap, isSeq, type Document } from 'yaml';
import { lineOfPath } from './field-line.js';
import { fail, ok, type Result } from '../util/result.js';
import { silentLogger, type Logger } from '../util/log.js';
import { errorMessage } from '../util/errors.js';
import type { ConfigError, ConfigOrigin } from './config.js';
import { kindForApiKind, splitApiVersion } from './kinds.js';
import {
  checkYamlLimits,
  DEFAULT_PARSE_LIMITS,
  fileTooLargeMessage,
  jsonDepthExceeds,
  lineOfOffset,
  type ParseLimits,
} from './parse-limits.js';
import type { RawObject } from './validation/index.js';

export interface ParseOptions {
  readonly limits?: Partial<ParseLimits>;
  /** Receives the debug notes about skipped documents. */
  readonly logger?: Logger;
}

export interface ParsedDocument {
  readonly object: RawObject;
  readonly origin: ConfigOrigin;
  /** The line of a field (a validation error's path, e.g. `spec.http[0].match[0].uri.regex`), when it is in the document. */
  readonly lineOf?: (path: string) => number | undefined;
}

/** A document's node in its parsed file and how to turn offsets into lines (found on first use). */
type NodeOf = () => { node: unknown; lineAt: (offset: number) => number } | undefined;

/**
 * Errors pointed at their field's line (the document's first line when the path is not in it):
 * `bad-dr.yaml:11 … spec.trafficPolicy.conectionPool: unknown field`, not `bad-dr.yaml:1`.
 */
export function atFieldLines(errors: readonly ConfigError[], doc: ParsedDocument): ConfigError[] {
  const lineOf = doc.lineOf;
  if (!lineOf) return [...errors];
  return errors.map((e) => {
    if (e.path === undefined || e.origin.file !== doc.origin.file) return e;
    const line = lineOf(e.path);
    return line !== undefined && line !== e.origin.line ? { ...e, origin: { ...e.origin, line } } : e;
  });
}

export interface ParsedFile {
  /** Documents of served kinds, in file order, not yet validated. */
  readonly documents: readonly ParsedDocument[];
  /** Documents that are not Kubernetes objects at all (a bare list or scalar). */
  readonly errors: readonly ConfigError[];
  /** Empty documents and documents of kinds meshpilot does not serve. */
  readonly skipped: number;
  /** Every document as parsed (any kind, `List`s whole) with its start line, for readers of the other kinds. */
  readonly values: readonly ParsedValue[];
  /** The documents' syntax trees and their offset-to-line map, built on first call for JSON (for field lines). */
  readonly trees: () => ParsedTrees;
}

export interface ParsedValue {
  readonly value: unknown;
  readonly line: number;
}

export interface ParsedTrees {
  /** Each document's root node (yaml's `Document.contents`), in file order. */
  readonly roots: readonly unknown[];
  readonly lineAt: (offset: number) => number;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const isJsonFile = (file: string): boolean => file.toLowerCase().endsWith('.json');

/** Parses the text of `file` (the name decides YAML or JSON and appears in errors). */
export function parseConfigFile(text: string, file: string, opts: ParseOptions = {}): Result<ParsedFile, ConfigError> {
  const limits: ParseLimits = { ...DEFAULT_PARSE_LIMITS, ...opts.limits };
  const size = Buffer.byteLength(text, 'utf8');
  if (size > limits.maxFileBytes) {
    return fail({ origin: { file }, message: fileTooLargeMessage(size, limits) });
  }
  const out = new Collector(file, opts.logger ?? silentLogger);
  const r = isJsonFile(file) ? parseJson(text, file, limits, out) : parseYaml(text, file, limits, out);
  return r ?? ok(out.result());
}

function parseYaml(text: string, file: string, limits: ParseLimits, out: Collector): Result<never, ConfigError> | undefined {
  const lc = new LineCounter();
  const violation = checkYamlLimits(text, limits);
  if (violation) {
    return fail({ origin: { file, line: lineOfOffset(text, violation.offset) }, message: violation.message });
  }
  // logLevel 'error': yaml's warnings (a collection used as a key) would go to process.emitWarning,
  // one stderr line per key per reload, outside the structured log; such keys fail validation anyway.
  const docs = parseAllDocuments(text, { lineCounter: lc, prettyErrors: false, merge: true, logLevel: 'error' });
  const lineAt = (offset: number): number => lc.linePos(offset).line;
  const nodes =
    (root: unknown): NodeOf =>
    () => ({ node: root, lineAt });
  out.trees = () => ({ roots: docs.map((d) => d.contents), lineAt });

  // One syntax error can shift document boundaries, so none of the file's documents is trusted.
  const syntax: ConfigError[] = [];
  for (const doc of docs) {
    for (const e of doc.errors)
      syntax.push({ origin: { file, line: lineAt(e.pos[0]) }, message: `YAML syntax error: ${firstLine(e.message)}` });
  }
  if (syntax.length > 0) return fail(...syntax);

  for (const doc of docs) {
    const line = lineAt(doc.contents?.range[0] ?? doc.range[0]);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (err) {
      return fail({
        origin: { file, line },
        message: `YAML document cannot be expanded: ${errorMessage(err)} (alias limit ${limits.maxAliasCount})`,
      });
    }
    // Aliases can nest what the lexer saw as shallow.
    if (jsonDepthExceeds(value, limits.maxDepth))
      return fail({ origin: { file, line }, message: `nesting deeper than ${limits.maxDepth} levels` });
    out.values.push({ value, line });
    out.add(value, line, listItemLines(doc, lineAt), nodes(doc.contents), (i) => nodes(listItems(doc)?.[i]));
  }
  return undefined;
}

function parseJson(text: string, file: string, limits: ParseLimits, out: Collector): Result<never, ConfigError> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const msg = errorMessage(err);
    const pos = /position (\d+)/.exec(msg);
    const line = pos ? lineOfOffset(text, Number(pos[1])) : yamlErrorLine(text, limits);
    return fail({ origin: line !== undefined ? { file, line } : { file }, message: `JSON syntax error: ${msg}` });
  }
  if (jsonDepthExceeds(value, limits.maxDepth))
    return fail({ origin: { file, line: 1 }, message: `nesting deeper than ${limits.maxDepth} levels` });
  // JSON is YAML, and the YAML parser knows where each node starts (depth is bounded above); the
  // file is parsed that way only when a line is asked for.
  let yamlDoc: { doc: Document; lineAt: (offset: number) => number } | undefined;
  const asYaml = (): { doc: Document; lineAt: (offset: number) => number } => {
    if (!yamlDoc) {
      const lc = new LineCounter();
      yamlDoc = { doc: parseDocument(text, { lineCounter: lc, logLevel: 'error' }), lineAt: (o) => lc.linePos(o).line };
    }
    return yamlDoc;
  };
  out.values.push({ value, line: 1 });
  out.trees = () => ({ roots: [asYaml().doc.contents], lineAt: asYaml().lineAt });
  let itemLines: (number | undefined)[] | undefined;
  if (isRecord(value) && value.kind === 'List' && Array.isArray(value.items)) itemLines = listItemLines(asYaml().doc, asYaml().lineAt);
  out.add(
    value,
    1,
    itemLines,
    () => ({ node: asYaml().doc.contents, lineAt: asYaml().lineAt }),
    (i) => () => ({ node: listItems(asYaml().doc)?.[i], lineAt: asYaml().lineAt }),
  );
  return undefined;
}

/** The item nodes of a `kind: List` document's `items`, when it has them. */
function listItems(doc: Document): readonly unknown[] | undefined {
  const contents = doc.contents;
  if (!isMap(contents)) return undefined;
  const items = contents.get('items', true);
  return isSeq(items) ? items.items : undefined;
}

/** Start lines of the `items` of a `kind: List` document, when the document is one. */
function listItemLines(doc: Document, lineAt: (offset: number) => number): (number | undefined)[] | undefined {
  return listItems(doc)?.map((n) => {
    const range = (n as { range?: [number, number, number] } | null)?.range;
    return range ? lineAt(range[0]) : undefined;
  });
}

const firstLine = (s: string): string => s.split('\n')[0] ?? s;

/** Node 20's JSON.parse often gives no position; the YAML parser usually trips at the same place. */
function yamlErrorLine(text: string, limits: ParseLimits): number | undefined {
  if (checkYamlLimits(text, limits)) return undefined;
  const lc = new LineCounter();
  const e = parseDocument(text, { lineCounter: lc, prettyErrors: false }).errors[0];
  return e ? lc.linePos(e.pos[0]).line : undefined;
}

/** Decides, per document, whether it is served, skipped or not an object at all. */
class Collector {
  readonly #documents: ParsedDocument[] = [];
  readonly #errors: ConfigError[] = [];
  #skipped = 0;
  readonly values: ParsedValue[] = [];
  trees: () => ParsedTrees = () => ({ roots: [], lineAt: () => 1 });

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  add(
    value: unknown,
    line: number,
    itemLines: readonly (number | undefined)[] | undefined,
    nodeOf?: NodeOf,
    itemNodeOf?: (i: number) => NodeOf,
  ): void {
    if (value === null || value === undefined) {
      this.#skipped++;
      return;
    }
    if (!isRecord(value)) {
      this.#errors.push({
        origin: { file: this.file, line },
        message: `document is not a Kubernetes object (got ${Array.isArray(value) ? 'a list' : typeof value})`,
      });
      return;
    }
    if (value.kind === 'List' && Array.isArray(value.items)) {
      value.items.forEach((item, i) => this.add(item, itemLines?.[i] ?? line, undefined, itemNodeOf?.(i)));
      return;
    }
    const kind = value.kind;
    const apiVersion = value.apiVersion;
    const group = typeof apiVersion === 'string' ? splitApiVersion(apiVersion).group : undefined;
    const info = typeof kind === 'string' ? kindForApiKind(kind, group) : undefined;
    // Ours when the kind is served and the group matches (or is missing: validation says so).
    // A served kind with a wrong *version* is passed on, and validation rejects it.
    if (!info || (apiVersion !== undefined && group !== info.group)) {
      this.#skipped++;
      this.logger.debug('skipping document of a kind meshpilot does not serve', {
        file: this.file,
        line,
        apiVersion: typeof apiVersion === 'string' ? apiVersion : undefined,
        kind: typeof kind === 'string' ? kind : undefined,
      });
      return;
    }
    const specFields = info.specFields;
    this.#documents.push({
      object: { apiVersion, kind, metadata: value.metadata, spec: specFields ? pick(value, specFields) : value.spec },
      origin: { file: this.file, line },
      ...(nodeOf
        ? {
            lineOf: (path: string): number | undefined => {
              const at = nodeOf();
              if (!at) return undefined;
              // Kinds whose spec is gathered from top-level fields (specFields): spec.X is X in the file.
              const p = specFields && /^spec(?=[.[]|$)/.test(path) ? path.slice('spec'.length).replace(/^\./, '') : path;
              return p === '' ? undefined : lineOfPath(at.node, p, at.lineAt);
            },
          }
        : {}),
    });
  }

  result(): ParsedFile {
    return { documents: this.#documents, errors: this.#errors, skipped: this.#skipped, values: this.values, trees: this.trees };
  }
}

function pick(o: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) if (o[f] !== undefined) out[f] = o[f];
  return out;
}
