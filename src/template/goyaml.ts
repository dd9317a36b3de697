/**
 * YAML output identical to sigs.k8s.io/yaml.Marshal (Helm's and istiod's toYaml): the value is
 * JSON-encoded, decoded by go-yaml v2 and emitted by its libyaml port — block style, indentless
 * sequences under mapping keys, keys in go-yaml's natural sort order, strings quoted only when they
 * would resolve to another type or cannot be plain, long scalars folded at column 80.
 */
import { FuncError } from './errors.js';
import { formatFloat } from './fmt.js';
import { jsonFloat } from './gojson.js';
import { kindOf, type GoMap, type Int64 } from './values.js';

const BEST_INDENT = 2;
const BEST_WIDTH = 80;

type YNode =
  { t: 'scalar'; text: string; isString: boolean } | { t: 'seq'; items: YNode[] } | { t: 'map'; entries: Array<[string, YNode]> };

/** The value after the JSON round trip sigs.k8s.io/yaml makes. */
function toYNode(v: unknown): YNode {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      return { t: 'scalar', text: 'null', isString: false };
    case 'bool':
      return { t: 'scalar', text: String(v), isString: false };
    case 'int':
      return { t: 'scalar', text: (v as bigint).toString(), isString: false };
    case 'int64':
      return { t: 'scalar', text: (v as Int64).value.toString(), isString: false };
    case 'float64': {
      // JSON text read back by go-yaml: an int if it fits int64/uint64, else a float64 ('g' format).
      const j = jsonFloat(v as number);
      const asInt = /[.eE]/.test(j) ? null : BigInt(j);
      const fits = asInt !== null && asInt >= -(1n << 63n) && asInt < 1n << 64n;
      return { t: 'scalar', text: fits ? j : formatFloat(Number(j), 'g', -1), isString: false };
    }
    case 'string':
      return { t: 'scalar', text: foldNel(v as string, false), isString: true };
    case 'slice':
      return { t: 'seq', items: (v as unknown[]).map(toYNode) };
    case 'map':
    case 'struct': {
      const m = v as GoMap;
      const keys = Object.keys(m)
        .filter((k) => typeof m[k] !== 'function' && m[k] !== undefined)
        .sort(yamlKeyCompare);
      return { t: 'map', entries: keys.map((k) => [foldNel(k, true), toYNode(m[k])]) };
    }
    case 'func':
      throw new FuncError('json: unsupported type: func()');
  }
}

const isLetter = (c: string): boolean => /\p{L}/u.test(c);
const isDigit = (c: string): boolean => /\p{Nd}/u.test(c);

/** go-yaml v2's keyList.Less for string keys: letters before..., digit runs compared as numbers. */
export function yamlKeyCompare(a: string, b: string): number {
  if (a === b) return 0;
  return yamlKeyLess(a, b) ? -1 : yamlKeyLess(b, a) ? 1 : 0;
}

function yamlKeyLess(a: string, b: string): boolean {
  const ar = [...a];
  const br = [...b];
  for (let i = 0; i < ar.length && i < br.length; i++) {
    const x = ar[i] ?? '';
    const y = br[i] ?? '';
    if (x === y) continue;
    const al = isLetter(x);
    const bl = isLetter(y);
    if (al && bl) return (x.codePointAt(0) ?? 0) < (y.codePointAt(0) ?? 0);
    if (al || bl) return bl;
    let an = 0n;
    let bn = 0n;
    if (x === '0' || y === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j] ?? ''); j--) {
        if (ar[j] !== '0') {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai] ?? ''); ai++) an = an * 10n + BigInt((ar[ai]?.codePointAt(0) ?? 48) - 48);
    let bi = i;
    for (; bi < br.length && isDigit(br[bi] ?? ''); bi++) bn = bn * 10n + BigInt((br[bi]?.codePointAt(0) ?? 48) - 48);
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return (x.codePointAt(0) ?? 0) < (y.codePointAt(0) ?? 0);
  }
  return ar.length < br.length;
}

// --- go-yaml v2 resolve: would this plain text read back as something other than a string? ---

const RESOLVE_MAP = new Set([
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'true',
  'True',
  'TRUE',
  'on',
  'On',
  'ON',
  'n',
  'N',
  'no',
  'No',
  'NO',
  'false',
  'False',
  'FALSE',
  'off',
  'Off',
  'OFF',
  '',
  '~',
  'null',
  'Null',
  'NULL',
  '.nan',
  '.NaN',
  '.NAN',
  '.inf',
  '.Inf',
  '.INF',
  '+.inf',
  '+.Inf',
  '+.INF',
  '-.inf',
  '-.Inf',
  '-.INF',
  '<<',
]);
const YAML_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/;
const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/;
const TIMESTAMP = /^\d{4}-\d{1,2}-\d{1,2}(?:(?:[Tt]|[ ])\d{1,2}:\d{1,2}:\d{1,2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})?)?$/;

function resolvesToString(s: string): boolean {
  const hint = s[0] ?? '';
  // go-yaml only looks further at texts whose first character is in its resolve table.
  if (s !== '' && !/^[-+0-9yYnNtTfFoO~.]/.test(s)) return true;
  if (RESOLVE_MAP.has(s)) return false;
  if (hint === '.') return !/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s) && !/^\.(inf|nan)$/i.test(s);
  if (hint === '+' || hint === '-' || (hint >= '0' && hint <= '9')) {
    if (TIMESTAMP.test(s) && validTimestamp(s)) return false;
    const plain = s.replace(/_/g, '');
    if (/^[+-]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]*|[1-9][0-9]*|0[bB][01]+)$/.test(plain) && goIntOk(plain)) return false;
    if (YAML_FLOAT.test(plain)) return false;
    if (/^-?0b[01]+$/.test(plain)) return false;
  }
  return true;
}

function goIntOk(plain: string): boolean {
  // strconv.ParseInt/ParseUint base 0 accept "0", octal with a leading 0, 0o, 0x, 0b; a sign only for ParseInt.
  return /^[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*|0[bB][01]+)$/.test(plain);
}

function validTimestamp(s: string): boolean {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})/.exec(s);
  if (m === null) return false;
  const month = Number(m[2]);
  const day = Number(m[3]);
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

// --- scalar analysis (yaml_emitter_analyze_scalar) ---

function isPrintable(cp: number): boolean {
  return cp === 0x0a || (cp >= 0x20 && cp <= 0x7e) || (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd && cp !== 0xfeff);
}
const isBreakCh = (c: string): boolean => c === '\n' || c === '\r' || c === '\u0085' || c === '\u2028' || c === '\u2029';
const isBlankZ = (c: string | undefined): boolean => c === undefined || c === ' ' || c === '\t' || c === '\0' || isBreakCh(c);

interface Analysis {
  multiline: boolean;
  blockPlain: boolean;
  singleQuoted: boolean;
  block: boolean;
}

function analyze(value: string): Analysis {
  if (value === '') return { multiline: false, blockPlain: true, singleQuoted: true, block: false };
  let blockInd = false;
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let precededByWs = true;
  let prevSpace = false;
  let prevBreak = false;
  if (value.startsWith('---') || value.startsWith('...')) blockInd = true;
  const n = value.length;
  for (let i = 0; i < n;) {
    const cp = value.codePointAt(i) ?? 0;
    const w = cp > 0xffff ? 2 : 1;
    const c = w === 1 ? (value[i] ?? '') : String.fromCodePoint(cp);
    const next = value[i + w];
    const followedByWs = next === undefined || next === ' ' || next === '\t' || isBreakCh(next);
    const first = i === 0;
    const last = i + w >= n;
    if (first) {
      if ('#,[]{}&*!|>\'"%@`'.includes(c)) blockInd = true;
      else if ((c === '?' || c === ':') && followedByWs) blockInd = true;
      else if (c === '-' && followedByWs) blockInd = true;
    } else if (c === ':' && followedByWs) blockInd = true;
    else if (c === '#' && precededByWs) blockInd = true;
    if (!isPrintable(cp)) special = true;
    if (c === ' ') {
      if (first) leadingSpace = true;
      if (last) trailingSpace = true;
      if (prevBreak) breakSpace = true;
      prevSpace = true;
      prevBreak = false;
    } else if (isBreakCh(c)) {
      lineBreaks = true;
      if (first) leadingBreak = true;
      if (last) trailingBreak = true;
      if (prevSpace) spaceBreak = true;
      prevSpace = false;
      prevBreak = true;
    } else {
      prevSpace = false;
      prevBreak = false;
    }
    precededByWs = isBlankZ(c);
    i += w;
  }
  const a: Analysis = { multiline: lineBreaks, blockPlain: true, singleQuoted: true, block: true };
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak) a.blockPlain = false;
  if (trailingSpace) a.block = false;
  if (breakSpace) {
    a.blockPlain = false;
    a.singleQuoted = false;
  }
  if (spaceBreak || special) {
    a.blockPlain = false;
    a.singleQuoted = false;
    a.block = false;
  }
  if (lineBreaks) a.blockPlain = false;
  if (blockInd) a.blockPlain = false;
  return a;
}

type Style = 'plain' | 'single' | 'double' | 'literal';

/** yaml_emitter_check_simple_key for a scalar key: single line and at most 128 bytes. */
function isSimpleKey(k: string): boolean {
  return Buffer.byteLength(k, 'utf8') <= 128 && !analyze(k).multiline;
}

/**
 * JSON text is read back by go-yaml, whose scanner folds a raw NEL (U+0085, which encoding/json
 * leaves unescaped) in a quoted scalar like a line break; in a key it fails the whole marshal.
 */
function foldNel(s: string, isKey: boolean): string {
  if (!s.includes('\u0085')) return s;
  if (isKey) throw new FuncError('yaml: line 1: did not find expected key');
  // Folding also drops the spaces around the break (tabs arrive JSON-escaped, so they stay).
  return s.replace(/ *\u0085+ */g, (run) => {
    const n = run.replace(/ /g, '').length;
    return n === 1 ? ' ' : '\n'.repeat(n - 1);
  });
}

class Emitter {
  out = '';
  column = 0;
  indent = -1;
  private indents: number[] = [];
  whitespace = true;
  indention = true;

  private put(s: string): void {
    this.out += s;
    if (s.length === 1) this.column++;
    else for (const _ of s) this.column++;
  }
  private putBreak(): void {
    this.out += '\n';
    this.column = 0;
  }
  increaseIndent(flow: boolean, indentless: boolean): void {
    this.indents.push(this.indent);
    if (this.indent < 0) this.indent = flow ? BEST_INDENT : 0;
    else if (!indentless) this.indent += BEST_INDENT;
  }
  popIndent(): void {
    this.indent = this.indents.pop() ?? -1;
  }
  writeIndent(): void {
    const indent = Math.max(this.indent, 0);
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace)) this.putBreak();
    while (this.column < indent) this.put(' ');
    this.whitespace = true;
    this.indention = true;
  }
  writeIndicator(ind: string, needWs: boolean, isWs: boolean, isIndention: boolean): void {
    if (needWs && !this.whitespace) this.put(' ');
    this.put(ind);
    this.whitespace = isWs;
    this.indention = this.indention && isIndention;
  }

  node(n: YNode, ctx: { mapping: boolean; simpleKey: boolean }): void {
    if (n.t === 'scalar') return this.scalar(n.text, n.isString, ctx.simpleKey);
    if (n.t === 'seq') {
      if (n.items.length === 0) return this.emptyFlow('[', ']');
      this.increaseIndent(false, ctx.mapping && !this.indention);
      for (const item of n.items) {
        this.writeIndent();
        this.writeIndicator('-', true, false, true);
        this.node(item, { mapping: false, simpleKey: false });
      }
      this.popIndent();
      return;
    }
    if (n.entries.length === 0) return this.emptyFlow('{', '}');
    this.increaseIndent(false, false);
    for (const [k, v] of n.entries) {
      this.writeIndent();
      if (isSimpleKey(k)) {
        this.scalar(k, true, true);
        this.writeIndicator(':', false, false, false);
      } else {
        // libyaml's complex key: "? key" then ": value" on its own line.
        this.writeIndicator('?', true, false, true);
        this.scalar(k, true, false);
        this.writeIndent();
        this.writeIndicator(':', true, false, true);
      }
      this.node(v, { mapping: true, simpleKey: false });
    }
    this.popIndent();
  }

  private emptyFlow(open: string, close: string): void {
    this.writeIndicator(open, true, true, false);
    this.increaseIndent(true, false);
    this.popIndent();
    this.writeIndicator(close, false, false, false);
  }

  private scalar(text: string, isString: boolean, simpleKey: boolean): void {
    let style: Style = 'plain';
    if (isString) {
      if (text.includes('\n')) style = 'literal';
      else if (!resolvesToString(text) || BASE60_FLOAT.test(text)) style = 'double';
    }
    const a = analyze(text);
    if (simpleKey && a.multiline) style = 'double';
    if (style === 'plain') {
      if (!a.blockPlain) style = 'single';
      if (text === '' && simpleKey) style = 'single';
    }
    if (style === 'single' && !a.singleQuoted) style = 'double';
    if (style === 'literal' && (!a.block || simpleKey)) style = 'double';
    this.increaseIndent(true, false);
    const allowBreaks = !simpleKey;
    switch (style) {
      case 'plain':
        this.writePlain(text, allowBreaks);
        break;
      case 'single':
        this.writeSingle(text, allowBreaks);
        break;
      case 'double':
        this.writeDouble(text, allowBreaks);
        break;
      case 'literal':
        this.writeLiteral(text);
        break;
    }
    this.popIndent();
  }

  private writePlain(value: string, allowBreaks: boolean): void {
    if (!this.whitespace) this.put(' ');
    const ch = [...value];
    let spaces = false;
    let breaks = false;
    for (let i = 0; i < ch.length; i++) {
      const c = ch[i] ?? '';
      if (c === ' ') {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && ch[i + 1] !== ' ') this.writeIndent();
        else this.put(c);
        spaces = true;
      } else if (isBreakCh(c)) {
        if (!breaks && c === '\n') this.putBreak();
        this.writeBreak(c);
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.put(c);
        this.indention = false;
        spaces = false;
        breaks = false;
      }
    }
    this.whitespace = false;
    this.indention = false;
  }

  private writeBreak(c: string): void {
    if (c === '\n') this.putBreak();
    else {
      this.out += c;
      this.column = 0;
    }
  }

  private writeSingle(value: string, allowBreaks: boolean): void {
    this.writeIndicator("'", true, false, false);
    const ch = [...value];
    let spaces = false;
    let breaks = false;
    for (let i = 0; i < ch.length; i++) {
      const c = ch[i] ?? '';
      if (c === ' ') {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i > 0 && i < ch.length - 1 && ch[i + 1] !== ' ') this.writeIndent();
        else this.put(c);
        spaces = true;
      } else if (isBreakCh(c)) {
        if (!breaks && c === '\n') this.putBreak();
        this.writeBreak(c);
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        if (c === "'") this.put("'");
        this.put(c);
        this.indention = false;
        spaces = false;
        breaks = false;
      }
    }
    this.writeIndicator("'", false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private writeDouble(value: string, allowBreaks: boolean): void {
    this.writeIndicator('"', true, false, false);
    const ch = [...value];
    let spaces = false;
    for (let i = 0; i < ch.length; i++) {
      const c = ch[i] ?? '';
      const cp = c.codePointAt(0) ?? 0;
      if (!isPrintable(cp) || cp === 0xfeff || isBreakCh(c) || c === '"' || c === '\\') {
        const named: Record<number, string> = {
          0: '0',
          7: 'a',
          8: 'b',
          9: 't',
          10: 'n',
          11: 'v',
          12: 'f',
          13: 'r',
          0x1b: 'e',
          0x22: '"',
          0x5c: '\\',
          0x85: 'N',
          0xa0: '_',
          0x2028: 'L',
          0x2029: 'P',
        };
        const e = named[cp];
        if (e !== undefined) this.put('\\' + e);
        else if (cp <= 0xff) this.put('\\x' + cp.toString(16).toUpperCase().padStart(2, '0'));
        else if (cp <= 0xffff) this.put('\\u' + cp.toString(16).toUpperCase().padStart(4, '0'));
        else this.put('\\U' + cp.toString(16).toUpperCase().padStart(8, '0'));
        spaces = false;
      } else if (c === ' ') {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i > 0 && i < ch.length - 1) {
          this.writeIndent();
          if (ch[i + 1] === ' ') this.put('\\');
        } else {
          this.put(c);
        }
        spaces = true;
      } else {
        this.put(c);
        spaces = false;
      }
    }
    this.writeIndicator('"', false, false, false);
    this.whitespace = false;
    this.indention = false;
  }

  private writeLiteral(value: string): void {
    this.writeIndicator('|', true, false, false);
    const ch = [...value];
    if (ch[0] === ' ' || isBreakCh(ch[0] ?? '')) this.writeIndicator(String(BEST_INDENT), false, false, false);
    let chomp = '';
    const last = ch.length - 1;
    if (!isBreakCh(ch[last] ?? '')) chomp = '-';
    else if (last === 0) chomp = '+';
    else if (isBreakCh(ch[last - 1] ?? '')) chomp = '+';
    if (chomp !== '') this.writeIndicator(chomp, false, false, false);
    this.putBreak();
    this.indention = true;
    this.whitespace = true;
    let breaks = true;
    for (const c of ch) {
      if (isBreakCh(c)) {
        this.writeBreak(c);
        this.indention = true;
        breaks = true;
      } else {
        if (breaks) this.writeIndent();
        this.put(c);
        this.indention = false;
        breaks = false;
      }
    }
  }
}

/** sigs.k8s.io/yaml.Marshal(v) as text (with its trailing newline). */
export function marshalYaml(v: unknown): string {
  const e = new Emitter();
  e.node(toYNode(v), { mapping: false, simpleKey: false });
  if (e.column !== 0 || e.out === '') e.out += '\n';
  return e.out;
}
