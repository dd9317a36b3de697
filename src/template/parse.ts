/**
 * Parser for Go text/template (same grammar, scoping of variables, else-if/else-with desugaring and
 * error texts as Go's text/template/parse/parse.go).
 */
import { TemplateError } from './errors.js';
import { lex, type Token, type TokenKind } from './lexer.js';
import type {
  ArgNode,
  BranchNode,
  CommandNode,
  ListNode,
  Node,
  NumberNode,
  PipeNode,
  Source,
  TemplateNode,
  VariableNode,
} from './nodes.js';
import { parseGoNumber, unquoteGo } from './literals.js';

export interface ParsedTree {
  readonly name: string;
  readonly root: ListNode;
  readonly src: Source;
}

type Terminal = { type: 'end'; pos: number } | { type: 'else'; pos: number };

const OPERAND_START: ReadonlySet<TokenKind> = new Set<TokenKind>([
  'bool',
  'charConstant',
  'dot',
  'field',
  'identifier',
  'number',
  'nil',
  'rawString',
  'string',
  'variable',
  'leftParen',
]);

/**
 * Parses one file: its top-level text becomes template `name`, each {{define}}/{{block}} another tree.
 * Returns all trees in definition order (the top-level one first).
 */
export function parseFile(name: string, text: string, hasFunc: (name: string) => boolean): ParsedTree[] {
  const src: Source = { parseName: name, text };
  const tokens = lex(text);
  let i = 0;
  let vars: string[] = ['$'];
  let rangeDepth = 0;
  let actionLine = 0;
  const trees: ParsedTree[] = [];
  const addTree = (tname: string, root: ListNode): void => {
    const prior = trees.find((t) => t.name === tname);
    if (prior !== undefined && !isEmptyTree(prior.root) && !isEmptyTree(root)) {
      errorf(`template: multiple definition of template "${tname}"`);
    }
    if (prior === undefined || isEmptyTree(prior.root)) trees.push({ name: tname, root, src });
  };
  let last: Token = tokens[0] ?? { kind: 'eof', val: '', pos: 0, line: 1 };

  const errorf = (msg: string): never => {
    throw new TemplateError(`template: ${name}:${last.line}: ${msg}`, { location: `${name}:${last.line}` });
  };
  const next = (): Token => {
    const t = tokens[i] ?? tokens[tokens.length - 1] ?? last;
    if (i < tokens.length) i++;
    last = t;
    return t;
  };
  const peek = (): Token => tokens[i] ?? tokens[tokens.length - 1] ?? last;
  const backup = (n = 1): void => {
    i -= n;
  };
  const nextNonSpace = (): Token => {
    let t = next();
    while (t.kind === 'space') t = next();
    return t;
  };
  const peekNonSpace = (): Token => {
    const t = nextNonSpace();
    backup();
    return t;
  };
  const tokenString = (t: Token): string => {
    if (t.kind === 'eof') return 'EOF';
    if (t.kind === 'error') return t.val;
    if (KEYWORD_KINDS.has(t.kind)) return `<${t.val}>`;
    if (t.val.length > 10) return `${goQuote(t.val.slice(0, 10))}...`;
    return goQuote(t.val);
  };
  const unexpected = (t: Token, context: string): never => {
    if (t.kind === 'error') {
      let extra = '';
      if (actionLine !== 0 && actionLine !== t.line) {
        extra = ` in action started at ${name}:${actionLine}`;
        if (t.val.endsWith(' action')) extra = extra.slice(' in action'.length);
      }
      return errorf(`${t.val}${extra}`);
    }
    return errorf(`unexpected ${tokenString(t)} in ${context}`);
  };
  const expect = (kind: TokenKind, context: string): Token => {
    const t = nextNonSpace();
    if (t.kind !== kind) unexpected(t, context);
    return t;
  };
  const list = (pos: number): ListNode => ({ type: 'list', pos, src, nodes: [] });

  function itemList(): { list: ListNode; end: Terminal } {
    const l = list(peekNonSpace().pos);
    while (peekNonSpace().kind !== 'eof') {
      const n = textOrAction();
      if (n === null) continue;
      if ('type' in n && (n.type === 'end' || n.type === 'else')) return { list: l, end: n as Terminal };
      l.nodes.push(n as Node);
    }
    return errorf('unexpected EOF');
  }

  function textOrAction(): Node | Terminal | null {
    const t = nextNonSpace();
    if (t.kind === 'text') return { type: 'text', pos: t.pos, src, text: t.val };
    if (t.kind === 'leftDelim') {
      actionLine = peek().line;
      try {
        return action();
      } finally {
        actionLine = 0;
      }
    }
    if (t.kind === 'comment') return null;
    return unexpected(t, 'input');
  }

  function action(): Node | Terminal {
    const t = nextNonSpace();
    switch (t.kind) {
      case 'block':
        return blockControl();
      case 'break':
      case 'continue': {
        const word = t.kind;
        const n = nextNonSpace();
        if (n.kind !== 'rightDelim') unexpected(n, `{{${word}}}`);
        if (rangeDepth === 0) errorf(`{{${word}}} outside {{range}}`);
        return { type: word, pos: t.pos, src };
      }
      case 'else': {
        const p = peekNonSpace();
        if (p.kind === 'if' || p.kind === 'with') return { type: 'else', pos: p.pos };
        const e = expect('rightDelim', 'else');
        return { type: 'else', pos: e.pos };
      }
      case 'end':
        return { type: 'end', pos: expect('rightDelim', 'end').pos };
      case 'if':
        return control('if');
      case 'range':
        return control('range');
      case 'with':
        return control('with');
      case 'template':
        return templateControl();
      default: {
        backup();
        const p = peek();
        return { type: 'action', pos: p.pos, src, pipe: pipeline('command', 'rightDelim') };
      }
    }
  }

  function control(context: 'if' | 'range' | 'with'): BranchNode {
    const mark = vars.length;
    try {
      const pipe = pipeline(context, 'rightDelim');
      if (context === 'range') rangeDepth++;
      const body = itemList();
      if (context === 'range') rangeDepth--;
      let elseList: ListNode | null = null;
      if (body.end.type === 'else') {
        if ((context === 'if' && peek().kind === 'if') || (context === 'with' && peek().kind === 'with')) {
          next();
          elseList = list(body.end.pos);
          elseList.nodes.push(control(context));
        } else {
          const e = itemList();
          if (e.end.type !== 'end') errorf(`expected end; found {{else}}`);
          elseList = e.list;
        }
      }
      return { type: context, pos: pipe.pos, src, pipe, list: body.list, elseList };
    } finally {
      vars = vars.slice(0, mark);
    }
  }

  function templateName(t: Token, context: string): string {
    if (t.kind === 'string' || t.kind === 'rawString') return unquoteOrFail(t.val);
    return unexpected(t, context);
  }

  function templateControl(): TemplateNode {
    const context = 'template clause';
    const t = nextNonSpace();
    const tname = templateName(t, context);
    let pipe: PipeNode | null = null;
    if (nextNonSpace().kind !== 'rightDelim') {
      backup();
      pipe = pipeline(context, 'rightDelim');
    }
    return { type: 'template', pos: t.pos, src, name: tname, pipe };
  }

  function blockControl(): TemplateNode {
    const context = 'block clause';
    const t = nextNonSpace();
    const tname = templateName(t, context);
    const pipe = pipeline(context, 'rightDelim');
    const savedVars = vars;
    const savedDepth = rangeDepth;
    vars = ['$'];
    rangeDepth = 0;
    const body = itemList();
    vars = savedVars;
    rangeDepth = savedDepth;
    if (body.end.type !== 'end') errorf(`unexpected {{else}} in ${context}`);
    addTree(tname, body.list);
    return { type: 'template', pos: t.pos, src, name: tname, pipe };
  }

  function definition(): void {
    const context = 'define clause';
    const t = nextNonSpace();
    if (t.kind !== 'string' && t.kind !== 'rawString') unexpected(t, context);
    const tname = unquoteOrFail(t.val);
    expect('rightDelim', context);
    // Go parses a {{define}} as a separate Tree: its variables are its own, and the enclosing
    // file's variables stay in scope after it (Istio's mutatingwebhook.yaml relies on this).
    const savedVars = vars;
    const savedDepth = rangeDepth;
    vars = ['$'];
    rangeDepth = 0;
    const body = itemList();
    if (body.end.type !== 'end') errorf(`unexpected {{else}} in ${context}`);
    addTree(tname, body.list);
    vars = savedVars;
    rangeDepth = savedDepth;
  }

  function pipeline(context: string, end: TokenKind): PipeNode {
    const first = peekNonSpace();
    const pipe: PipeNode = { type: 'pipe', pos: first.pos, src, isAssign: false, decl: [], cmds: [] };
    for (;;) {
      const v = peekNonSpace();
      if (v.kind !== 'variable') break;
      nextNonSpace();
      const afterVariable = peek();
      const n = peekNonSpace();
      if (n.kind === 'assign' || n.kind === 'declare') {
        pipe.isAssign = n.kind === 'assign';
        nextNonSpace();
        pipe.decl.push(variableNode(v.pos, v.val));
        vars.push(v.val);
        break;
      }
      if (n.kind === 'char' && n.val === ',') {
        nextNonSpace();
        pipe.decl.push(variableNode(v.pos, v.val));
        vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          const p = peekNonSpace().kind;
          if (p === 'variable' || p === 'rightDelim' || p === 'rightParen') continue;
          errorf('range can only initialize variables');
        }
        errorf(`too many declarations in ${context}`);
      }
      // Not a declaration: "$x foo" or "$x}}" — push the variable back.
      backup(afterVariable.kind === 'space' ? 2 : 1);
      break;
    }
    for (;;) {
      const t = nextNonSpace();
      if (t.kind === end) {
        checkPipeline(pipe, context);
        return pipe;
      }
      if (OPERAND_START.has(t.kind)) {
        backup();
        pipe.cmds.push(command());
        continue;
      }
      unexpected(t, context);
    }
  }

  function checkPipeline(pipe: PipeNode, context: string): void {
    if (pipe.cmds.length === 0) errorf(`missing value for ${context}`);
    pipe.cmds.slice(1).forEach((c, idx) => {
      const t = c.args[0]?.type;
      if (t === 'bool' || t === 'dot' || t === 'nil' || t === 'number' || t === 'string') {
        errorf(`non executable command in pipeline stage ${idx + 2}`);
      }
    });
  }

  function command(): CommandNode {
    const cmd: CommandNode = { type: 'command', pos: peekNonSpace().pos, src, args: [] };
    for (;;) {
      peekNonSpace();
      const op = operand();
      if (op !== null) cmd.args.push(op);
      const t = next();
      if (t.kind === 'space') continue;
      if (t.kind === 'rightDelim' || t.kind === 'rightParen') backup();
      else if (t.kind !== 'pipe') unexpected(t, 'operand');
      break;
    }
    if (cmd.args.length === 0) errorf('empty command');
    return cmd;
  }

  function operand(): ArgNode | null {
    const node = term();
    if (node === null) return null;
    if (peek().kind !== 'field') return node;
    const chainPos = peek().pos;
    const fields: string[] = [];
    while (peek().kind === 'field') fields.push(next().val.slice(1));
    switch (node.type) {
      case 'field':
        return { type: 'field', pos: chainPos, src, ident: [...node.ident, ...fields] };
      case 'variable':
        return { type: 'variable', pos: chainPos, src, ident: [...node.ident, ...fields] };
      case 'bool':
      case 'string':
      case 'number':
      case 'nil':
      case 'dot':
        return errorf(`unexpected . after term ${goQuote(termString(node))}`);
      default:
        return { type: 'chain', pos: chainPos, src, node, field: fields };
    }
  }

  function term(): ArgNode | null {
    const t = nextNonSpace();
    switch (t.kind) {
      case 'identifier':
        if (!hasFunc(t.val)) errorf(`function ${goQuote(t.val)} not defined`);
        return { type: 'identifier', pos: t.pos, src, ident: t.val };
      case 'dot':
        return { type: 'dot', pos: t.pos, src };
      case 'nil':
        return { type: 'nil', pos: t.pos, src };
      case 'variable': {
        const v = variableNode(t.pos, t.val);
        if (!vars.includes(v.ident[0] ?? '')) errorf(`undefined variable ${goQuote(v.ident[0] ?? '')}`);
        return v;
      }
      case 'field':
        return { type: 'field', pos: t.pos, src, ident: t.val.slice(1).split('.') };
      case 'bool':
        return { type: 'bool', pos: t.pos, src, value: t.val === 'true' };
      case 'charConstant':
      case 'number': {
        const parsed = parseGoNumber(t.val, t.kind === 'charConstant');
        if (typeof parsed === 'string') return errorf(parsed);
        const n: NumberNode = { type: 'number', pos: t.pos, src, text: t.val, ...parsed };
        return n;
      }
      case 'leftParen':
        return pipeline('parenthesized pipeline', 'rightParen');
      case 'string':
      case 'rawString':
        return { type: 'string', pos: t.pos, src, quoted: t.val, text: unquoteOrFail(t.val) };
      default:
        backup();
        return null;
    }
  }

  function variableNode(pos: number, ident: string): VariableNode {
    return { type: 'variable', pos, src, ident: ident.split('.') };
  }

  function unquoteOrFail(quoted: string): string {
    const s = unquoteGo(quoted);
    if (s === null) errorf('invalid syntax');
    return s ?? '';
  }

  // Top level: text and actions of the file itself, definitions split off.
  const root = list(0);
  while (peek().kind !== 'eof') {
    if (peek().kind === 'leftDelim') {
      const delimAt = i;
      next();
      if (nextNonSpace().kind === 'define') {
        definition();
        continue;
      }
      i = delimAt;
    }
    const n = textOrAction();
    if (n === null) continue;
    if ('src' in n) root.nodes.push(n);
    else errorf(`unexpected {{${n.type}}}`);
  }
  // Go adds the file's own tree last: it may not clash with a non-empty {{define}} of the same name.
  const same = trees.findIndex((t) => t.name === name);
  const own = trees[same];
  if (own !== undefined) {
    if (!isEmptyTree(own.root) && !isEmptyTree(root)) errorf(`template: multiple definition of template "${name}"`);
    if (isEmptyTree(own.root)) trees.splice(same, 1);
    else return trees;
  }
  return [{ name, root, src }, ...trees];
}

/** Go's parse.IsEmptyTree: only whitespace text (comments are dropped while parsing). */
export function isEmptyTree(root: ListNode): boolean {
  const empty = (n: Node): boolean => {
    if (n.type === 'text') return n.text.trim() === '';
    if (n.type === 'list') return n.nodes.every(empty);
    return false;
  };
  return empty(root);
}

const KEYWORD_KINDS: ReadonlySet<TokenKind> = new Set<TokenKind>([
  'block',
  'break',
  'continue',
  'dot',
  'define',
  'else',
  'end',
  'if',
  'range',
  'nil',
  'template',
  'with',
]);

function termString(n: ArgNode): string {
  switch (n.type) {
    case 'bool':
      return String(n.value);
    case 'string':
      return n.quoted;
    case 'number':
      return n.text;
    case 'nil':
      return 'nil';
    default:
      return '.';
  }
}

/** Go's %q of a string (strconv.Quote). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (cp < 0x20 || cp === 0x7f) out += '\\x' + cp.toString(16).padStart(2, '0');
    else if (cp < 0x80 || /[\p{L}\p{M}\p{N}\p{P}\p{S}]/u.test(ch)) out += ch;
    else if (cp < 0x10000) out += '\\u' + cp.toString(16).padStart(4, '0');
    else out += '\\U' + cp.toString(16).padStart(8, '0');
  }
  return out + '"';
}
