/** AST of a parsed template, mirroring Go's text/template/parse node kinds. */

/** Where a node came from: the parse (file) name and its text, for `name:line:col` in errors. */
export interface Source {
  readonly parseName: string;
  readonly text: string;
}

interface Base {
  readonly pos: number;
  readonly src: Source;
}

export interface TextNode extends Base {
  readonly type: 'text';
  readonly text: string;
}
export interface ListNode extends Base {
  readonly type: 'list';
  readonly nodes: Node[];
}
export interface ActionNode extends Base {
  readonly type: 'action';
  readonly pipe: PipeNode;
}
export interface BranchNode extends Base {
  readonly type: 'if' | 'range' | 'with';
  readonly pipe: PipeNode;
  readonly list: ListNode;
  readonly elseList: ListNode | null;
}
export interface TemplateNode extends Base {
  readonly type: 'template';
  readonly name: string;
  readonly pipe: PipeNode | null;
}
export interface BreakNode extends Base {
  readonly type: 'break';
}
export interface ContinueNode extends Base {
  readonly type: 'continue';
}

export interface PipeNode extends Base {
  readonly type: 'pipe';
  isAssign: boolean;
  readonly decl: VariableNode[];
  readonly cmds: CommandNode[];
}
export interface CommandNode extends Base {
  readonly type: 'command';
  readonly args: ArgNode[];
}
export interface FieldNode extends Base {
  readonly type: 'field';
  readonly ident: string[];
}
export interface VariableNode extends Base {
  readonly type: 'variable';
  readonly ident: string[];
}
export interface ChainNode extends Base {
  readonly type: 'chain';
  readonly node: ArgNode;
  readonly field: string[];
}
export interface IdentifierNode extends Base {
  readonly type: 'identifier';
  readonly ident: string;
}
export interface DotNode extends Base {
  readonly type: 'dot';
}
export interface NilNode extends Base {
  readonly type: 'nil';
}
export interface BoolNode extends Base {
  readonly type: 'bool';
  readonly value: boolean;
}
export interface StringNode extends Base {
  readonly type: 'string';
  readonly quoted: string;
  readonly text: string;
}
export interface NumberNode extends Base {
  readonly type: 'number';
  readonly text: string;
  /** Set when the constant is representable as a Go int64 (integral floats included, as Go does). */
  readonly int: bigint | null;
  /** Set when the constant is representable as a float64. */
  readonly float: number | null;
  readonly isChar: boolean;
}

export type ArgNode =
  FieldNode | VariableNode | ChainNode | IdentifierNode | DotNode | NilNode | BoolNode | StringNode | NumberNode | PipeNode;
export type Node = TextNode | ListNode | ActionNode | BranchNode | TemplateNode | BreakNode | ContinueNode;

/** Go's Node.String(), used for the `<...>` context of execution errors. */
export function nodeString(n: ArgNode | CommandNode): string {
  switch (n.type) {
    case 'field':
      return '.' + n.ident.join('.');
    case 'variable':
      return n.ident.join('.');
    case 'chain': {
      const inner = n.node.type === 'pipe' ? `(${nodeString(n.node)})` : nodeString(n.node);
      return inner + n.field.map((f) => '.' + f).join('');
    }
    case 'identifier':
      return n.ident;
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'bool':
      return n.value ? 'true' : 'false';
    case 'string':
      return n.quoted;
    case 'number':
      return n.text;
    case 'command':
      return n.args.map((a) => (a.type === 'pipe' ? `(${nodeString(a)})` : nodeString(a))).join(' ');
    case 'pipe': {
      let s = '';
      if (n.decl.length > 0) {
        s = n.decl.map((d) => nodeString(d)).join(', ') + (n.isAssign ? ' = ' : ' := ');
      }
      return s + n.cmds.map((c) => nodeString(c)).join(' | ');
    }
  }
}

/** `name:line:col` of a position, computed as Go's Tree.ErrorContext does (first line: 0-based column). */
export function location(src: Source, pos: number): string {
  const before = src.text.slice(0, pos);
  const nl = before.lastIndexOf('\n');
  const col = nl < 0 ? pos : pos - (nl + 1);
  let line = 1;
  for (let i = before.indexOf('\n'); i >= 0; i = before.indexOf('\n', i + 1)) line++;
  return `${src.parseName}:${line}:${col}`;
}
