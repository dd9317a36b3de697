/** encoding/json Marshal/MarshalIndent/Unmarshal as Go does them for JSON-like values. */
import { MeshError } from '../util/errors.js';
import { FuncError } from './errors.js';
import { formatFloat } from './fmt.js';
import { compareStrings, isPlainObject, kindOf, type GoMap, type Int64 } from './values.js';

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
    case 'nil':
      return 'null';
    case 'string':
      return jsonString(v as string, esc);
    case 'float64':
      return jsonFloat(v as number);
    case 'int':
      return (v as bigint).toString();
    case 'int64':
      return (v as Int64).value.toString();
    case 'bool':
      return String(v);
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
    case 'func':
      throw new FuncError('json: unsupported type: func()');
  }
}

/** json.Unmarshal into interface{}: numbers become float64 (JS numbers); syntax errors in Go's words. */
export function unmarshalJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new FuncError(goJsonSyntaxError(text) ?? (e instanceof Error ? e.message : String(e)));
  }
}

/** Go's quoteChar for "invalid character" messages. */
function quoteChar(c: string): string {
  if (c === "'") return "'\\''";
  if (c === '"') return `'"'`;
  const q = JSON.stringify(c);
  return `'${q.slice(1, -1)}'`;
}

/** The message encoding/json's scanner gives for malformed input, or null if none was found. */
export function goJsonSyntaxError(text: string): string | null {
  let i = 0;
  class Bad extends MeshError {
    constructor(message: string) {
      super('INVALID_ARGUMENT', message);
    }
  }
  const fail = (msg: string): never => {
    throw new Bad(msg);
  };
  const eof = (): never => fail('unexpected end of JSON input');
  const ws = (): void => {
    while (i < text.length && ' \t\r\n'.includes(text[i] ?? '')) i++;
  };
  const invalid = (context: string): never => {
    // At the end, Go's scanner steps a ' ' through unfinished literals and numbers.
    const c = String.fromCodePoint(text.codePointAt(i) ?? 0x20);
    return fail(`invalid character ${quoteChar(c)} ${context}`);
  };
  const literal = (word: string): void => {
    for (let k = 1; k < word.length; k++) {
      i++;
      if (text[i] !== word[k]) invalid(`in literal ${word} (expecting ${quoteChar(word[k] ?? '')})`);
    }
    i++;
  };
  const str = (): void => {
    i++;
    for (;;) {
      if (i >= text.length) eof();
      const c = text[i] ?? '';
      if (c === '"') {
        i++;
        return;
      }
      if (c === '\\') {
        i++;
        if (i >= text.length) eof();
        const e = text[i] ?? '';
        if (e === 'u') {
          for (let k = 0; k < 4; k++) {
            i++;
            if (i >= text.length) eof();
            if (!/[0-9a-fA-F]/.test(text[i] ?? '')) invalid('in \\u hexadecimal character escape');
          }
        } else if (!'"\\/bfnrt'.includes(e)) invalid('in string escape code');
      } else if (c.charCodeAt(0) < 0x20) invalid('in string literal');
      i++;
    }
  };
  const num = (): void => {
    if (text[i] === '-') {
      i++;
      if (!/[0-9]/.test(text[i] ?? '')) invalid('in numeric literal');
    }
    if (text[i] === '0') i++;
    else while (/[0-9]/.test(text[i] ?? '')) i++;
    if (text[i] === '.') {
      i++;
      if (!/[0-9]/.test(text[i] ?? '')) invalid('after decimal point in numeric literal');
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      if (!/[0-9]/.test(text[i] ?? '')) invalid('in exponent of numeric literal');
      while (/[0-9]/.test(text[i] ?? '')) i++;
    }
  };
  const value = (): void => {
    ws();
    if (i >= text.length) eof();
    const c = text[i] ?? '';
    if (c === '{') {
      i++;
      ws();
      if (i >= text.length) eof();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (i >= text.length) eof();
        if (text[i] !== '"') invalid('looking for beginning of object key string');
        str();
        ws();
        if (i >= text.length) eof();
        if (text[i] !== ':') invalid('after object key');
        i++;
        value();
        ws();
        if (i >= text.length) eof();
        if (text[i] === '}') {
          i++;
          return;
        }
        if (text[i] !== ',') invalid('after object key:value pair');
        i++;
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (i >= text.length) eof();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (i >= text.length) eof();
        if (text[i] === ']') {
          i++;
          return;
        }
        if (text[i] !== ',') invalid('after array element');
        i++;
      }
    }
    if (c === '"') return str();
    if (c === '-' || (c >= '0' && c <= '9')) return num();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    invalid('looking for beginning of value');
  };
  try {
    value();
    ws();
    if (i < text.length) invalid('after top-level value');
    return null;
  } catch (e) {
    if (e instanceof Bad) return e.message;
    throw e;
  }
}
