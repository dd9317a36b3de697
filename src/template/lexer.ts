/**
 * Lexer for Go text/template syntax (same tokens, trim markers and error texts as Go's
 * text/template/parse/lex.go). Produces the whole token list up front; templates are small.
 */

export type TokenKind =
  | 'error'
  | 'bool'
  | 'char'
  | 'assign'
  | 'declare'
  | 'eof'
  | 'field'
  | 'identifier'
  | 'leftDelim'
  | 'leftParen'
  | 'number'
  | 'pipe'
  | 'rawString'
  | 'rightDelim'
  | 'rightParen'
  | 'space'
  | 'string'
  | 'text'
  | 'variable'
  | 'comment'
  | 'charConstant'
  // keywords
  | 'block'
  | 'break'
  | 'continue'
  | 'dot'
  | 'define'
  | 'else'
  | 'end'
  | 'if'
  | 'range'
  | 'nil'
  | 'template'
  | 'with';

export interface Token {
  kind: TokenKind;
  val: string;
  pos: number;
  line: number;
}

const KEYWORDS: ReadonlyMap<string, TokenKind> = new Map<string, TokenKind>([
  ['.', 'dot'],
  ['block', 'block'],
  ['break', 'break'],
  ['continue', 'continue'],
  ['define', 'define'],
  ['else', 'else'],
  ['end', 'end'],
  ['if', 'if'],
  ['range', 'range'],
  ['nil', 'nil'],
  ['template', 'template'],
  ['with', 'with'],
]);

const LEFT = '{{';
const RIGHT = '}}';
const TRIM_MARKER_LEN = 2; // "-" plus one space
const COMMENT_OPEN = '/*';
const COMMENT_CLOSE = '*/';

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}

function isAlphaNumeric(c: string): boolean {
  return c === '_' || /^[\p{L}\p{Nd}]$/u.test(c);
}

function isDigitOf(c: string, digits: string): boolean {
  return c !== '' && digits.includes(c);
}

/** Go's %#U rendering of a character, used in "bad character" errors. */
export function goCharU(c: string): string {
  const cp = c.codePointAt(0) ?? 0;
  const hex = cp.toString(16).toUpperCase().padStart(4, '0');
  return /\p{L}|\p{M}|\p{N}|\p{P}|\p{S}|[ ]/u.test(c) ? `U+${hex} '${c}'` : `U+${hex}`;
}

export function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  let start = 0;
  let line = 1;
  let startLine = 1;
  let parenDepth = 0;
  let insideAction = false;

  const peek = (offset = 0): string => input[pos + offset] ?? '';
  const next = (): string => {
    const c = input[pos] ?? '';
    if (c === '') return '';
    pos++;
    if (c === '\n') line++;
    return c;
  };
  const backup = (): void => {
    pos--;
    if (input[pos] === '\n') line--;
  };
  const emit = (kind: TokenKind): void => {
    tokens.push({ kind, val: input.slice(start, pos), pos: start, line: startLine });
    start = pos;
    startLine = line;
  };
  const ignore = (): void => {
    line += countNewlines(input.slice(start, pos));
    start = pos;
    startLine = line;
  };
  const fail = (message: string): Token[] => {
    tokens.push({ kind: 'error', val: message, pos: start, line: startLine });
    return tokens;
  };

  const atLeftTrim = (at: number): boolean => input[at] === '-' && isSpace(input[at + 1] ?? '');
  const atRightDelim = (): { delim: boolean; trim: boolean } => {
    if (isSpace(peek()) && input.startsWith('-' + RIGHT, pos + 1)) return { delim: true, trim: true };
    if (input.startsWith(RIGHT, pos)) return { delim: true, trim: false };
    return { delim: false, trim: false };
  };

  // lexText / lexLeftDelim / lexComment / lexInsideAction as one loop.
  for (;;) {
    if (!insideAction) {
      const x = input.indexOf(LEFT, pos);
      if (x < 0) {
        pos = input.length;
        line = startLine + countNewlines(input.slice(start, pos));
        if (pos > start) emit('text');
        tokens.push({ kind: 'eof', val: '', pos, line });
        return tokens;
      }
      const trimLeft = atLeftTrim(x + LEFT.length);
      let textEnd = x;
      if (trimLeft) textEnd = start + rightTrimLength(input.slice(start, x));
      pos = textEnd;
      line = startLine + countNewlines(input.slice(start, pos));
      if (pos > start) emit('text');
      pos = x;
      line = startLine + countNewlines(input.slice(start, pos));
      ignore();
      // left delimiter
      let afterMarker = LEFT.length;
      if (trimLeft) afterMarker += TRIM_MARKER_LEN;
      if (input.startsWith(COMMENT_OPEN, x + afterMarker)) {
        pos = x + afterMarker;
        ignore();
        // comment
        const end = input.indexOf(COMMENT_CLOSE, pos + COMMENT_OPEN.length);
        if (end < 0) return fail('unclosed comment');
        pos = end + COMMENT_CLOSE.length;
        line = startLine + countNewlines(input.slice(start, pos));
        const rd = atRightDelim();
        if (!rd.delim) return fail('comment ends before closing delimiter');
        emit('comment');
        if (rd.trim) pos += TRIM_MARKER_LEN;
        pos += RIGHT.length;
        if (rd.trim) pos += leftTrimLength(input.slice(pos));
        ignore();
        continue;
      }
      pos = x + LEFT.length;
      emit('leftDelim');
      if (trimLeft) {
        pos += TRIM_MARKER_LEN;
        ignore();
      }
      insideAction = true;
      parenDepth = 0;
      continue;
    }

    // inside action
    const rd = atRightDelim();
    if (rd.delim && parenDepth === 0) {
      if (rd.trim) {
        pos += TRIM_MARKER_LEN;
        ignore();
      }
      pos += RIGHT.length;
      emit('rightDelim');
      if (rd.trim) {
        pos += leftTrimLength(input.slice(pos));
        line = startLine + countNewlines(input.slice(start, pos));
        ignore();
      }
      insideAction = false;
      continue;
    }
    const c = next();
    if (c === '') return fail('unclosed action');
    if (isSpace(c)) {
      backup();
      // lexSpace: a single space before "-}}" belongs to the trim marker.
      let spaces = 0;
      while (isSpace(peek())) {
        next();
        spaces++;
      }
      if (input.startsWith('-' + RIGHT, pos)) {
        backup();
        if (spaces === 1) continue;
      }
      emit('space');
      continue;
    }
    if (c === '=') {
      emit('assign');
      continue;
    }
    if (c === ':') {
      if (next() !== '=') return fail('expected :=');
      emit('declare');
      continue;
    }
    if (c === '|') {
      emit('pipe');
      continue;
    }
    if (c === '"') {
      for (;;) {
        const d = next();
        if (d === '\\') {
          const e = next();
          if (e !== '' && e !== '\n') continue;
          return fail('unterminated quoted string');
        }
        if (d === '' || d === '\n') return fail('unterminated quoted string');
        if (d === '"') break;
      }
      emit('string');
      continue;
    }
    if (c === '`') {
      const end = input.indexOf('`', pos);
      if (end < 0) return fail('unterminated raw quoted string');
      pos = end + 1;
      line = startLine + countNewlines(input.slice(start, pos));
      emit('rawString');
      continue;
    }
    if (c === '$') {
      lexIdentLike();
      emit('variable');
      if (!checkTerminator()) return tokens;
      continue;
    }
    if (c === "'") {
      for (;;) {
        const d = next();
        if (d === '\\') {
          const e = next();
          if (e !== '' && e !== '\n') continue;
          return fail('unterminated character constant');
        }
        if (d === '' || d === '\n') return fail('unterminated character constant');
        if (d === "'") break;
      }
      emit('charConstant');
      continue;
    }
    if (c === '.') {
      if (peek() < '0' || peek() > '9') {
        // field or dot
        if (!isAlphaNumeric(peek())) {
          emit('dot');
          continue;
        }
        lexIdentLike();
        emit('field');
        if (!checkTerminator()) return tokens;
        continue;
      }
      backup();
      if (!lexNumber()) return fail(`bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
      emit('number');
      continue;
    }
    if (c === '+' || c === '-' || (c >= '0' && c <= '9')) {
      backup();
      if (!lexNumber()) return fail(`bad number syntax: ${JSON.stringify(input.slice(start, pos))}`);
      emit('number');
      continue;
    }
    if (isAlphaNumeric(c)) {
      lexIdentLike();
      const word = input.slice(start, pos);
      const kw = KEYWORDS.get(word);
      if (kw !== undefined && kw !== 'dot') emit(kw);
      else if (word === 'true' || word === 'false') emit('bool');
      else emit('identifier');
      if (!checkTerminator()) return tokens;
      continue;
    }
    if (c === '(') {
      emit('leftParen');
      parenDepth++;
      continue;
    }
    if (c === ')') {
      parenDepth--;
      if (parenDepth < 0) return fail('unexpected right paren');
      emit('rightParen');
      continue;
    }
    if (c.charCodeAt(0) <= 0x7f && /[\x21-\x7e]/.test(c)) {
      emit('char');
      continue;
    }
    return fail(`unrecognized character in action: ${goCharU(c)}`);
  }

  function lexIdentLike(): void {
    while (isAlphaNumeric(peek())) next();
  }

  /** Go requires a word to be followed by a space, delimiter, '.', ',', '|', ':', '(' or ')'. */
  function checkTerminator(): boolean {
    const c = peek();
    if (c === '' || isSpace(c) || '.,|:()'.includes(c)) return true;
    if (input.startsWith(RIGHT, pos)) return true;
    fail(`bad character ${goCharU(c)}`);
    return false;
  }

  function lexNumber(): boolean {
    if (peek() === '+' || peek() === '-') next();
    let digits = '0123456789_';
    if (peek() === '0') {
      next();
      const p = peek();
      if (p === 'x' || p === 'X') {
        next();
        digits = '0123456789abcdefABCDEF_';
      } else if (p === 'o' || p === 'O') {
        next();
        digits = '01234567_';
      } else if (p === 'b' || p === 'B') {
        next();
        digits = '01_';
      }
    }
    while (isDigitOf(peek(), digits)) next();
    if (peek() === '.') {
      next();
      while (isDigitOf(peek(), digits)) next();
    }
    if (digits.length === 11 && (peek() === 'e' || peek() === 'E')) {
      next();
      if (peek() === '+' || peek() === '-') next();
      while (isDigitOf(peek(), '0123456789_')) next();
    }
    if (digits.length === 23 && (peek() === 'p' || peek() === 'P')) {
      next();
      if (peek() === '+' || peek() === '-') next();
      while (isDigitOf(peek(), '0123456789_')) next();
    }
    if (peek() === 'i') next();
    if (isAlphaNumeric(peek())) {
      next();
      return false;
    }
    return true;
  }
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

function rightTrimLength(s: string): number {
  let end = s.length;
  while (end > 0 && isSpace(s[end - 1] ?? '')) end--;
  return end;
}

function leftTrimLength(s: string): number {
  let i = 0;
  while (i < s.length && isSpace(s[i] ?? '')) i++;
  return i;
}
