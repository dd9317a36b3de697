/**
 * YAML decoding as Helm's fromYaml/fromYamlArray see it: sigs.k8s.io/yaml.Unmarshal, i.e. go-yaml
 * v2 (YAML 1.1 scalars: yes/no/on/off booleans, 0777 octal, timestamps kept as text) converted to
 * JSON (every number a float64, keys stringified, only the first document). The `yaml` package
 * parses; scalars are resolved here with go-yaml's rules from their source text.
 */
import { isAlias, isMap, isScalar, isSeq, parseAllDocuments, type Document, type Node as YamlNode } from 'yaml';
import { FuncError } from './errors.js';
import { formatFloat } from './fmt.js';
import { parseGoInt } from './literals.js';
import { printValue } from './fmt.js';
import { goQuote } from './parse.js';
import { deepCopy, setKey } from './values.js';

const BOOLS: Readonly<Record<string, boolean>> = {
  y: true,
  Y: true,
  yes: true,
  Yes: true,
  YES: true,
  true: true,
  True: true,
  TRUE: true,
  on: true,
  On: true,
  ON: true,
  n: false,
  N: false,
  no: false,
  No: false,
  NO: false,
  false: false,
  False: false,
  FALSE: false,
  off: false,
  Off: false,
  OFF: false,
};
const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const SPECIAL_FLOATS: Readonly<Record<string, number>> = {
  '.nan': NaN,
  '.NaN': NaN,
  '.NAN': NaN,
  '.inf': Infinity,
  '.Inf': Infinity,
  '.INF': Infinity,
  '+.inf': Infinity,
  '+.Inf': Infinity,
  '+.INF': Infinity,
  '-.inf': -Infinity,
  '-.Inf': -Infinity,
  '-.INF': -Infinity,
};
const YAML_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;

/** go-yaml v2's resolve() for a plain scalar, then the JSON step: numbers become float64. */
export function resolvePlain(s: string): unknown {
  const first = s[0] ?? '';
  if (s !== '' && !/^[-+0-9yYnNtTfFoO~.]/.test(first)) return s;
  if (NULLS.has(s)) return null;
  const b = BOOLS[s];
  if (b !== undefined) return b;
  const special = SPECIAL_FLOATS[s];
  if (special !== undefined) return special;
  if (first === '.') {
    return /^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(s) ? Number(s) : s;
  }
  if (first === '+' || first === '-' || (first >= '0' && first <= '9')) {
    const plain = s.replace(/_/g, '');
    const i = parseGoInt(plain);
    if (i !== null) return Number(i);
    if (/^\+?[0-9]+$/.test(plain) || /^0[xX][0-9a-fA-F]+$/.test(plain)) {
      const u = BigInt(plain.replace(/^\+/, ''));
      if (u < 1n << 64n) return Number(u);
    }
    if (YAML_FLOAT.test(plain)) return Number(plain);
    const bin = /^(-?)0b([01]+)$/.exec(plain);
    if (bin !== null) return (bin[1] === '-' ? -1 : 1) * parseInt(bin[2] ?? '0', 2);
  }
  return s;
}

function jsonSafe(v: unknown): unknown {
  if (typeof v === 'number' && !Number.isFinite(v)) {
    throw new FuncError(`json: unsupported value: ${formatFloat(v, 'g', -1)}`);
  }
  return v;
}

/** JSONToYAML's key conversion: scalars print as strings, null keys are refused. */
function keyString(key: unknown, value: unknown): string {
  if (typeof key === 'string') return key;
  if (typeof key === 'boolean') return String(key);
  if (typeof key === 'number') return Number.isInteger(key) ? String(key) : formatFloat(key, 'g', -1);
  const shown = typeof value === 'string' ? goQuote(value) : printValue(value ?? null);
  throw new FuncError(`unsupported map key of type: %!s(<nil>), key: <nil>, value: ${shown}`);
}

function convert(node: YamlNode | null | undefined, doc: Document, depth: number): unknown {
  if (depth > 1000) throw new FuncError('yaml: exceeded max depth');
  if (node === null || node === undefined) return null;
  if (isAlias(node)) return convert(node.resolve(doc) as YamlNode | undefined, doc, depth + 1);
  if (isScalar(node)) {
    if (node.type === 'PLAIN' && typeof node.source === 'string') return jsonSafe(resolvePlain(node.source));
    return typeof node.value === 'string' ? node.value : jsonSafe(node.value ?? null);
  }
  if (isSeq(node)) return node.items.map((n) => convert(n as YamlNode, doc, depth + 1));
  if (isMap(node)) {
    const out: Record<string, unknown> = {};
    for (const pair of node.items) {
      const keyNode = pair.key as YamlNode | null;
      if (isScalar(keyNode) && keyNode.type === 'PLAIN' && keyNode.source === '<<') {
        merge(out, pair.value as YamlNode | null, doc, depth);
        continue;
      }
      const value = convert(pair.value as YamlNode | null, doc, depth + 1);
      setKey(out, keyString(convert(keyNode, doc, depth + 1), value), value);
    }
    return out;
  }
  return null;
}

function copyInto(out: Record<string, unknown>, src: unknown): void {
  const m = src as Record<string, unknown>;
  for (const k of Object.keys(m)) setKey(out, k, m[k]);
}

/** go-yaml v2's merge: a mapping, or a sequence of mappings applied last to first. */
function merge(out: Record<string, unknown>, node: YamlNode | null, doc: Document, depth: number): void {
  const target = isAlias(node) ? (node.resolve(doc) as YamlNode | undefined) : node;
  if (isMap(target)) {
    copyInto(out, convert(target, doc, depth + 1));
    return;
  }
  if (isSeq(target)) {
    for (const item of [...target.items].reverse()) {
      const m = isAlias(item) ? item.resolve(doc) : item;
      if (!isMap(m)) throw new FuncError('yaml: map merge requires map or sequence of maps as the value');
      copyInto(out, convert(m as YamlNode, doc, depth + 1));
    }
    return;
  }
  throw new FuncError('yaml: map merge requires map or sequence of maps as the value');
}

/**
 * Large documents decoded before (a chart's CRDs go through fromYaml on every render, and again
 * when the output is read back): their decoded value, handed out as deep copies because templates
 * mutate what fromYaml returns (`set`, `unset`). Small texts are cheaper to parse than to look up.
 */
const MEMO_MIN_LENGTH = 4096;
const MEMO_MAX_ENTRIES = 256;
const memo = new Map<string, unknown>();

/** Decodes the first YAML document as sigs.k8s.io/yaml would; errors in Helm's words where known. */
export function decodeYamlLikeGo(text: string): unknown {
  if (text.length < MEMO_MIN_LENGTH) return decodeUncached(text);
  if (!memo.has(text)) {
    const value = decodeUncached(text);
    if (memo.size >= MEMO_MAX_ENTRIES) memo.delete(memo.keys().next().value as string);
    memo.set(text, value);
  }
  return deepCopy(memo.get(text));
}

function decodeUncached(text: string): unknown {
  const docs = parseAllDocuments(text, { version: '1.1', uniqueKeys: false, strict: false });
  const doc = (Array.isArray(docs) ? docs[0] : undefined) as Document | undefined;
  if (doc === undefined) return null;
  const err = doc.errors[0];
  if (err !== undefined) {
    const line = err.linePos?.[0].line;
    throw new FuncError(
      `error converting YAML to JSON: yaml: ${line === undefined ? '' : `line ${line}: `}${(err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
    );
  }
  try {
    return convert(doc.contents as YamlNode | null, doc, 0);
  } catch (e) {
    throw new FuncError(`error converting YAML to JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}
