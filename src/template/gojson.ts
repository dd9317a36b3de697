/** encoding/json Marshal/MarshalIndent/Unmarshal as Go does them for JSON-like values. */
import { FuncError } from './errors.js';
import { formatFloat } from './fmt.js';
import { compareStrings, isPlainObject, kindOf, type GoMap } from './values.js';

/** Go's json string encoding (HTML-safe escaping unless disabled, as json.Marshal does by default). */
export function jsonString(s: string, escapeHTML = true): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || (escapeHTML && (ch === '<' || ch === '>' || ch === '&')) || cp === 0x2028 || cp === 0x2029) {
      out += '\\u' + cp.toString(16).padStart(4, '0');
    } else if (cp >= 0xd800 && cp <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return out + '"';
}

/** encoding/json's float64 format: 'f' unless the exponent is small or large, then 'e' with e-7 not e-07. */
export function jsonFloat(f: number): string {
  if (!Number.isFinite(f)) throw new FuncError(`json: unsupported value: ${formatFloat(f, 'g', -1)}`);
  const abs = Math.abs(f);
  if (abs !== 0 && (abs < 1e-6 || abs >= 1e21)) {
    return formatFloat(f, 'e', -1).replace(/e([+-])0(\d)$/, 'e$1$2');
  }
  return formatFloat(f, 'f', -1);
}

export function marshalJson(v: unknown, indent = '', escapeHTML = true): string {
  return encode(v, indent, '', escapeHTML);
}

function encode(v: unknown, indent: string, cur: string, esc: boolean): string {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil': return 'null';
    case 'string': return jsonString(v as string, esc);
    case 'float64': return jsonFloat(v as number);
    case 'int': return (v as bigint).toString();
    case 'bool': return String(v);
    case 'slice': {
      const arr = v as unknown[];
      if (arr.length === 0) return '[]';
      if (indent === '') return '[' + arr.map((e) => encode(e, indent, cur, esc)).join(',') + ']';
      const inner = cur + indent;
      return '[\n' + arr.map((e) => inner + encode(e, indent, inner, esc)).join(',\n') + '\n' + cur + ']';
    }
    case 'map':
    case 'struct': {
      const m = v as GoMap;
      const keys = Object.keys(m).filter((k) => typeof m[k] !== 'function' && m[k] !== undefined);
      if (isPlainObject(v)) keys.sort(compareStrings);
      if (keys.length === 0) return '{}';
      const sep = indent === '' ? ':' : ': ';
      if (indent === '') return '{' + keys.map((k) => jsonString(k, esc) + sep + encode(m[k], indent, cur, esc)).join(',') + '}';
      const inner = cur + indent;
      return '{\n' + keys.map((k) => inner + jsonString(k, esc) + sep + encode(m[k], indent, inner, esc)).join(',\n') + '\n' + cur + '}';
    }
    case 'func': throw new FuncError('json: unsupported type: func()');
  }
}

/** json.Unmarshal into interface{}: numbers become float64 (JS numbers). */
export function unmarshalJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new FuncError(e instanceof Error ? e.message : String(e));
  }
}
