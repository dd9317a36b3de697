/**
 * Go text/template with the Sprig subset Helm and istiod use — the public surface.
 *
 * Values (values.ts): data is JSON-like and read as Go reads decoded JSON/YAML. A JS number is a
 * float64 (what encoding/json and sigs.k8s.io/yaml produce for every number: 1e6 prints as
 * `1e+06`, `eq .f 1` is Go's "incompatible types" error); a bigint is a Go int (template integer
 * literals, `len`, `int`) — pass Go int fields (ports, UIDs) as bigint; an `Int64` is a Go int64
 * (Sprig arithmetic results; Helm's --set integers). null is nil, a missing key is Go's invalid
 * value (`<no value>`). Plain objects are map[string]interface{}; `goStringMap()` marks a
 * map[string]string (labels, annotations: a missing key reads ""). Class instances are structs:
 * own properties are fields; functions (on the prototype, or own properties, in plain objects
 * too) are methods, called with template arguments (`.Files.Get "x"`, `.ProxyConfig.GetTracing`);
 * a thrown Error becomes `error calling <name>: <message>`.
 * Not modelled: Go's random map order for `keys`/`values` (sorted here), Sprig's date, random,
 * crypto and env functions, uint kinds, struct equality by value in `eq`.
 *
 * Custom funcs receive engine values and take any arguments (Go would check a typed signature);
 * `sprint`/`printValue` format values exactly as fmt does, `marshalYaml` is sigs.k8s.io/yaml's
 * Marshal, `decodeYamlLikeGo` its Unmarshal (Helm's values.yaml reading).
 *
 * Missing keys: 'default' prints `<no value>` (Go's default; what istiod uses). Helm executes with
 * missingkey=zero (a missing key is a nil interface, so `.a.b` under a missing `.a` is the error
 * "nil pointer evaluating interface {}.b") and afterwards replaces every "<no value>" in each
 * rendered file with "" — that replacement is the Helm renderer's job (tpl does it itself).
 * Errors are TemplateError with Go's wording; for Helm's required/fail, `userMessage` and
 * `location` give what Helm prints as "execution error at (<location>): <message>".
 */
import { BUILTINS } from './builtins.js';
import { TemplateError } from './errors.js';
import { Executor, TPL_NAME, type ExecEnv, type MissingKey } from './exec.js';
import type { FuncSpec } from './funcs.js';
import { isEmptyTree, parseFile, type ParsedTree } from './parse.js';
import { SPRIG } from './sprig.js';

export { TemplateError } from './errors.js';
export { marshalYaml } from './goyaml.js';
export { marshalJson } from './gojson.js';
export { sprint } from './fmt.js';
export { decodeYamlLikeGo } from './goyaml-decode.js';
export { goStringMap, Int64, deepCopy, intValue } from './values.js';

export type TemplateFunc = (...args: unknown[]) => unknown;

export interface TemplateOptions {
  /** Merged over the builtins and the Sprig subset (same name: the custom one wins, as Funcs() does). */
  funcs?: Readonly<Record<string, TemplateFunc>>;
  missingKey?: MissingKey;
  /** Nesting limit of {{template}}/include/tpl calls; default 200. */
  maxDepth?: number;
  /** Output limit in characters per execute(); default 64 MiB. */
  maxOutputLength?: number;
}

export interface TemplateSet {
  execute(name: string, data: unknown): string;
  has(name: string): boolean;
}

// Go allows 100000 nested calls and Helm 1000 includes of one name; a JS stack holds fewer, and real
// charts nest a handful, so 200 stops runaway recursion long before the stack runs out.
const DEFAULT_MAX_DEPTH = 200;
const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;

function buildFuncs(custom: Readonly<Record<string, TemplateFunc>> | undefined): Map<string, FuncSpec> {
  const funcs = new Map<string, FuncSpec>([...BUILTINS, ...SPRIG]);
  for (const [name, f] of Object.entries(custom ?? {})) {
    if (!/^[\p{L}_][\p{L}\p{Nd}_]*$/u.test(name)) throw new TemplateError(`function name "${name}" is not a valid identifier`);
    funcs.set(name, { params: [], variadic: 'any', fn: (args) => f(...args) });
  }
  return funcs;
}

/** Adds one file's trees as Go's Template.Parse does (an empty redefinition keeps the old body). */
function addTrees(into: Map<string, ParsedTree>, trees: ParsedTree[]): void {
  for (const t of trees) {
    const old = into.get(t.name);
    if (old !== undefined && isEmptyTree(t.root)) continue;
    into.set(t.name, t);
  }
}

export function parseTemplates(files: ReadonlyArray<{ name: string; text: string }>, opts: TemplateOptions = {}): TemplateSet {
  const funcs = buildFuncs(opts.funcs);
  const hasFunc = (n: string): boolean => funcs.has(n);
  const trees = new Map<string, ParsedTree>();
  for (const f of files) addTrees(trees, parseFile(f.name, f.text, hasFunc));
  const env: ExecEnv = {
    trees,
    funcs,
    missingKey: opts.missingKey ?? 'default',
    limits: { maxDepth: opts.maxDepth ?? DEFAULT_MAX_DEPTH, maxOutput: opts.maxOutputLength ?? DEFAULT_MAX_OUTPUT },
    parseText: (text) => {
      const copy = new Map(trees);
      addTrees(copy, parseFile(TPL_NAME, text, hasFunc));
      return copy;
    },
  };
  return {
    execute: (name, data) => Executor.run(env, name, data),
    has: (name) => trees.has(name),
  };
}

export function renderTemplate(text: string, data: unknown, opts: TemplateOptions & { name?: string } = {}): string {
  const name = opts.name ?? 'template';
  return parseTemplates([{ name, text }], opts).execute(name, data);
}
