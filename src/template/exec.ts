/**
 * Executor with Go text/template semantics (exec.go): pipelines with the previous command's value as
 * the final argument, variables with Go's scoping, if/with/range/template, missingkey modes, Go's
 * argument type checks, and errors worded as Go words them.
 */
import { FuncError, TemplateError, TemplateLimitError } from './errors.js';
import { printValue } from './fmt.js';
import type { CallContext, FuncMap, FuncSpec, GoType } from './funcs.js';
import type { ParsedTree } from './parse.js';
import {
  location,
  nodeString,
  type ArgNode,
  type BranchNode,
  type CommandNode,
  type Node,
  type NumberNode,
  type PipeNode,
  type TemplateNode,
  type VariableNode,
} from './nodes.js';
import { goTypeName, intValue, isStringMap, isTrue, kindOf, lookupField, mapZero, sortedKeys, type GoMap } from './values.js';

export type MissingKey = 'default' | 'zero' | 'error';

export interface ExecLimits {
  /** Nesting of {{template}} calls (Go: 100000; lower here because JS stacks are smaller). */
  readonly maxDepth: number;
  /** Characters of output before execution stops. */
  readonly maxOutput: number;
}

export interface ExecEnv {
  readonly trees: ReadonlyMap<string, ParsedTree>;
  readonly funcs: FuncMap;
  readonly missingKey: MissingKey;
  readonly limits: ExecLimits;
  /** Parses extra text against the same definitions (tpl). */
  readonly parseText: (text: string) => ReadonlyMap<string, ParsedTree>;
}

/** No final value from a previous pipeline command (Go's missingVal). */
const MISSING: unique symbol = Symbol('missing');
type Final = unknown;

const BREAK = Symbol('break');
const NOT_AN_ELEMENT = Symbol('notAnElement');
const CONTINUE = Symbol('continue');

interface Variable {
  name: string;
  value: unknown;
}

class Output {
  private parts: string[] = [];
  private length = 0;
  constructor(
    private readonly max: number,
    private readonly onOverflow: () => never,
  ) {}
  write(s: string): void {
    if (s === '') return;
    this.length += s.length;
    if (this.length > this.max) this.onOverflow();
    this.parts.push(s);
  }
  toString(): string {
    return this.parts.join('');
  }
}

type ErrNode = ArgNode | CommandNode | Node;

export class Executor implements CallContext {
  private vars: Variable[] = [];
  /** The function call in progress, for CallContext. */
  private callNode: ErrNode | null = null;
  private callArgs: readonly ArgNode[] = [];
  private node: ErrNode | null = null;
  /** The current range element: Go types it interface {} in "can't evaluate field" errors. */
  private rangeElem: unknown = undefined;
  private readonly out: Output;

  constructor(
    private readonly env: ExecEnv,
    private readonly tmplName: string,
    private readonly depth: number,
    out?: Output,
  ) {
    this.out =
      out ?? new Output(env.limits.maxOutput, () => this.fail(`output exceeds the limit of ${env.limits.maxOutput} characters`, true));
  }

  /** Executes the named template of the set; returns the text written. */
  static run(env: ExecEnv, name: string, data: unknown, depth = 0): string {
    const tree = env.trees.get(name);
    if (tree === undefined) throw new TemplateError(`template: no template "${name}" associated with template "${name}"`);
    const ex = new Executor(env, name, depth);
    // reflect.ValueOf(nil) is the invalid value: fields of nil data print "<no value>".
    const dot = data === null ? undefined : data;
    ex.vars = [{ name: '$', value: dot }];
    try {
      ex.walk(dot, tree.root);
    } catch (err) {
      if (err instanceof RangeError && /call stack/i.test(err.message)) {
        throw new TemplateLimitError(`template: ${name}: exceeded maximum template depth (JavaScript stack exhausted)`);
      }
      throw err;
    }
    return ex.out.toString();
  }

  private fail(msg: string, limit = false, userMessage?: string): never {
    const name = this.tmplName;
    const loc = this.node === null ? undefined : location(this.node.src, this.node.pos);
    const text =
      loc === undefined
        ? `template: ${name}: ${msg}`
        : `template: ${loc}: executing "${name}" at <${nodeContext(this.node as ErrNode)}>: ${msg}`;
    throw limit ? new TemplateLimitError(text, loc) : new TemplateError(text, { userMessage, location: loc });
  }

  private at(n: ErrNode): void {
    this.node = n;
  }

  // --- walking ---

  private walk(dot: unknown, node: Node): void {
    this.at(node);
    switch (node.type) {
      case 'text':
        this.out.write(node.text);
        return;
      case 'list':
        for (const n of node.nodes) this.walk(dot, n);
        return;
      case 'action': {
        const val = this.evalPipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) {
          this.at(node);
          this.out.write(this.printable(val, node));
        }
        return;
      }
      case 'if':
      case 'with':
        this.walkIfOrWith(dot, node);
        return;
      case 'range':
        this.walkRange(dot, node);
        return;
      case 'template':
        this.walkTemplate(dot, node);
        return;
      case 'break':
        throw BREAK;
      case 'continue':
        throw CONTINUE;
    }
  }

  private printable(v: unknown, node: Node): string {
    if (v === undefined) return '<no value>';
    if (typeof v === 'function') this.fail(`can't print ${nodeString((node as { pipe: PipeNode }).pipe)} of type ${goTypeName(v)}`);
    return printValue(v);
  }

  private walkIfOrWith(dot: unknown, node: BranchNode): void {
    const mark = this.vars.length;
    try {
      const val = this.evalPipeline(dot, node.pipe);
      if (isTrue(val) && node.type === 'with') {
        // with's dot is the pipeline's (concrete) value, no longer a range element.
        const savedElem = this.rangeElem;
        this.rangeElem = NOT_AN_ELEMENT;
        try {
          this.walk(val, node.list);
        } finally {
          this.rangeElem = savedElem;
        }
      } else if (isTrue(val)) this.walk(dot, node.list);
      else if (node.elseList !== null) this.walk(dot, node.elseList);
    } finally {
      this.vars.length = mark;
    }
  }

  private walkRange(dot: unknown, r: BranchNode): void {
    this.at(r);
    const outer = this.vars.length;
    try {
      const val = this.evalPipeline(dot, r.pipe);
      const mark = this.vars.length;
      const decl = r.pipe.decl;
      const one = (index: unknown, elem: unknown): boolean => {
        if (decl.length > 0) {
          // With two variables the index comes first; with one, the element.
          if (r.pipe.isAssign) this.setVar(nameOf(decl[0]), decl.length > 1 ? index : elem);
          else this.setTopVar(1, elem);
        }
        if (decl.length > 1) {
          if (r.pipe.isAssign) this.setVar(nameOf(decl[1]), elem);
          else this.setTopVar(2, index);
        }
        const savedElem = this.rangeElem;
        this.rangeElem = elem;
        try {
          this.walk(elem, r.list);
        } catch (e) {
          if (e === BREAK) return false;
          if (e !== CONTINUE) throw e;
        } finally {
          this.vars.length = mark;
          this.rangeElem = savedElem;
        }
        return true;
      };
      let iterated = false;
      switch (kindOf(val)) {
        case 'slice': {
          const arr = val as unknown[];
          for (let i = 0; i < arr.length; i++) {
            iterated = true;
            if (!one(BigInt(i), arr[i])) break;
          }
          break;
        }
        case 'map': {
          const m = val as GoMap;
          for (const k of sortedKeys(m)) {
            iterated = true;
            if (!one(k, m[k])) break;
          }
          break;
        }
        case 'int':
        case 'int64': {
          if (decl.length > 1) this.fail(`can't use ${printValue(val)} to iterate over more than one variable`);
          const n = intValue(val) ?? 0n;
          for (let i = 0n; i < n; i++) {
            iterated = true;
            if (!one(undefined, i)) break;
          }
          break;
        }
        case 'invalid':
        case 'nil':
          break;
        default:
          this.fail(`range can't iterate over ${printValue(val)}`);
      }
      if (!iterated && r.elseList !== null) this.walk(dot, r.elseList);
    } finally {
      this.vars.length = outer;
    }
  }

  private walkTemplate(dot: unknown, t: TemplateNode): void {
    this.at(t);
    const tree = this.env.trees.get(t.name);
    if (tree === undefined) this.fail(`template "${t.name}" not defined`);
    if (this.depth >= this.env.limits.maxDepth) this.fail(`exceeded maximum template depth (${this.env.limits.maxDepth})`, true);
    const newDot = t.pipe === null ? undefined : this.evalPipeline(dot, t.pipe);
    const sub = new Executor(this.env, t.name, this.depth + 1, this.out);
    sub.vars = [{ name: '$', value: newDot }];
    sub.walk(newDot, tree.root);
  }

  // --- variables ---

  private push(name: string, value: unknown): void {
    this.vars.push({ name, value });
  }

  private setTopVar(n: number, value: unknown): void {
    const v = this.vars[this.vars.length - n];
    if (v !== undefined) v.value = value;
  }

  private setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i];
      if (v !== undefined && v.name === name) {
        v.value = value;
        return;
      }
    }
    this.fail(`undefined variable: ${name}`);
  }

  private varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      const v = this.vars[i];
      if (v !== undefined && v.name === name) return v.value;
    }
    return this.fail(`undefined variable: ${name}`);
  }

  // --- evaluation ---

  private evalPipeline(dot: unknown, pipe: PipeNode): unknown {
    this.at(pipe);
    let value: Final = MISSING;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, cmd, value);
      // Go digs into interface{} results: a nil interface becomes an invalid value.
      if (value === null) value = undefined;
    }
    for (const v of pipe.decl) {
      if (pipe.isAssign) this.setVar(nameOf(v), value);
      else this.push(nameOf(v), value);
    }
    return value;
  }

  private evalCommand(dot: unknown, cmd: CommandNode, final: Final): unknown {
    const first = cmd.args[0];
    if (first === undefined) return this.fail('empty command');
    switch (first.type) {
      case 'field':
        this.at(first);
        return this.evalFieldChain(dot, dot, first, first.ident, cmd.args, final);
      case 'chain':
        return this.evalChain(dot, first, cmd.args, final);
      case 'identifier':
        return this.evalFunction(dot, first.ident, first, cmd, cmd.args, final);
      case 'pipe':
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first);
      case 'variable':
        return this.evalVariable(dot, first, cmd.args, final);
      default:
        break;
    }
    this.at(first);
    this.notAFunction(cmd.args, final);
    switch (first.type) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        return this.fail('nil is not a command');
      case 'number':
        return this.idealConstant(first);
      case 'string':
        return first.text;
    }
  }

  private notAFunction(args: readonly ArgNode[], final: Final): void {
    const first = args[0];
    if ((args.length > 1 || final !== MISSING) && first !== undefined)
      this.fail(`can't give argument to non-function ${nodeString(first)}`);
  }

  private idealConstant(n: NumberNode): unknown {
    this.at(n);
    // Go: a float unless the text is a hex int (0x… without p), a rune, or has no . e E p P.
    const isHexInt = /^0[xX]/.test(n.text) && !/[pP]/.test(n.text);
    const looksFloat = /[.eEpP]/.test(n.text) && !isHexInt && !n.isChar;
    if (n.float !== null && looksFloat) return n.float;
    if (n.int !== null) return n.int;
    return this.fail(`${n.text} overflows int`);
  }

  private evalChain(dot: unknown, chain: ArgNode & { type: 'chain' }, args: readonly ArgNode[], final: Final): unknown {
    this.at(chain);
    if (chain.node.type === 'nil') this.fail(`indirection through explicit nil in ${nodeString(chain)}`);
    const pipe = this.evalArg(dot, null, chain.node);
    return this.evalFieldChain(dot, pipe, chain, chain.field, args, final);
  }

  private evalVariable(dot: unknown, v: VariableNode, args: readonly ArgNode[], final: Final): unknown {
    this.at(v);
    const value = this.varValue(v.ident[0] ?? '$');
    if (v.ident.length === 1) {
      this.notAFunction(args, final);
      return value;
    }
    return this.evalFieldChain(dot, value, v, v.ident.slice(1), args, final);
  }

  private evalFieldChain(
    dot: unknown,
    receiver: unknown,
    node: ErrNode,
    ident: readonly string[],
    args: readonly ArgNode[],
    final: Final,
  ): unknown {
    let r = receiver;
    const n = ident.length;
    const ifaceDot = receiver === dot && dot === this.rangeElem && dot !== undefined;
    for (let i = 0; i < n - 1; i++) r = this.evalField(dot, ident[i] ?? '', node, [], MISSING, r, i > 0 || ifaceDot);
    return this.evalField(dot, ident[n - 1] ?? '', node, args, final, r, n > 1 || ifaceDot);
  }

  /** `fromField`: the receiver is a map element, whose static type Go names as interface {}. */
  private evalField(
    dot: unknown,
    name: string,
    node: ErrNode,
    args: readonly ArgNode[],
    final: Final,
    receiver: unknown,
    fromField = false,
  ): unknown {
    if (receiver === undefined) {
      if (this.env.missingKey === 'error') this.fail(`nil data; no entry for key "${name}"`);
      return undefined;
    }
    if (receiver === null) this.fail(`nil pointer evaluating interface {}.${name}`);
    const kind = kindOf(receiver);
    if (kind === 'map' || kind === 'struct') {
      const f = lookupField(receiver as object, name);
      if (f.isMethod) return this.callMethod(dot, name, f.value as (...a: unknown[]) => unknown, receiver, node, args, final);
      const hasArgs = args.length > 1 || final !== MISSING;
      if (kind === 'map') {
        if (hasArgs) this.fail(`${name} is not a method but has arguments`);
        if (!f.found) {
          switch (this.env.missingKey) {
            case 'default':
              return undefined;
            case 'zero':
              return mapZero(receiver as object);
            case 'error':
              this.fail(`map has no entry for key "${name}"`);
          }
        }
        return f.value;
      }
      if (f.found) {
        if (hasArgs) this.fail(`${name} has arguments but cannot be invoked as function`);
        return f.value;
      }
    }
    return this.fail(`can't evaluate field ${name} in type ${fromField ? 'interface {}' : goTypeName(receiver)}`);
  }

  private callMethod(
    dot: unknown,
    name: string,
    fn: (...a: unknown[]) => unknown,
    receiver: unknown,
    node: ErrNode,
    args: readonly ArgNode[],
    final: Final,
  ): unknown {
    const argv = args.slice(1).map((a) => this.evalArg(dot, 'any', a));
    if (final !== MISSING) argv.push(final ?? null);
    try {
      return fn.apply(receiver, argv);
    } catch (e) {
      if (e instanceof TemplateError) throw e;
      this.at(node);
      return this.fail(`error calling ${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private evalFunction(
    dot: unknown,
    name: string,
    ident: ArgNode,
    cmd: CommandNode | null,
    args: readonly ArgNode[],
    final: Final,
  ): unknown {
    this.at(ident);
    const fn = this.env.funcs.get(name);
    if (fn === undefined) return this.fail(`"${name}" is not a defined function`);
    return this.evalCall(dot, fn, name, cmd ?? ident, args, final);
  }

  private evalCall(dot: unknown, fn: FuncSpec, name: string, node: ErrNode, allArgs: readonly ArgNode[], final: Final): unknown {
    const args = allArgs.slice(1);
    const numIn = args.length + (final !== MISSING ? 1 : 0);
    const variadic = fn.variadic !== undefined;
    const numFixed = variadic ? fn.params.length : args.length;
    if (variadic) {
      if (numIn < numFixed) this.fail(`wrong number of args for ${name}: want at least ${fn.params.length} got ${args.length}`);
    } else if (numIn !== fn.params.length) {
      this.fail(`wrong number of args for ${name}: want ${fn.params.length} got ${numIn}`);
    }
    if (fn === AND_OR.get(name)) return this.evalAndOr(dot, name, args, final);
    const argv: unknown[] = [];
    let i = 0;
    for (; i < numFixed && i < args.length; i++) argv.push(this.evalArg(dot, fn.params[i] ?? 'any', args[i]!));
    if (variadic) for (; i < args.length; i++) argv.push(this.evalArg(dot, fn.variadic ?? 'any', args[i]!));
    if (final !== MISSING) {
      const t = variadic && numIn - 1 >= numFixed ? (fn.variadic ?? 'any') : (fn.params[numIn - 1] ?? 'any');
      argv.push(this.validateType(final, t));
    }
    const savedNode = this.callNode;
    const savedArgs = this.callArgs;
    this.callNode = node;
    this.callArgs = args;
    try {
      return fn.fn(argv, this);
    } catch (e) {
      if (e instanceof TemplateLimitError || (e instanceof RangeError && /call stack/i.test(e.message))) throw e;
      this.at(node);
      const msg = e instanceof Error ? e.message : String(e);
      const userMessage = e instanceof TemplateError ? e.userMessage : e instanceof FuncError && e.userFacing ? e.message : undefined;
      return this.fail(`error calling ${name}: ${msg}`, false, userMessage);
    } finally {
      this.callNode = savedNode;
      this.callArgs = savedArgs;
    }
  }

  // --- CallContext: what functions may ask of the call in progress (Helm's include and tpl) ---

  executeTemplate(tname: string, data: unknown): string {
    if (this.callNode !== null) this.at(this.callNode);
    if (this.depth >= this.env.limits.maxDepth) this.fail(`exceeded maximum template depth (${this.env.limits.maxDepth})`, true);
    return this.subExecute(this.env, tname, data);
  }

  executeText(text: string, data: unknown): string {
    if (this.callNode !== null) this.at(this.callNode);
    if (this.depth >= this.env.limits.maxDepth) this.fail(`exceeded maximum template depth (${this.env.limits.maxDepth})`, true);
    // Helm's tpl: parse errors and execution errors say which text failed; "<no value>" is dropped.
    let trees: ReadonlyMap<string, ParsedTree>;
    try {
      trees = this.env.parseText(text);
    } catch (e) {
      throw new FuncError(`cannot parse template ${JSON.stringify(text)}: ${e instanceof Error ? e.message : String(e)}`);
    }
    const env: ExecEnv = { ...this.env, trees };
    try {
      return this.subExecute(env, TPL_NAME, data).replaceAll('<no value>', '');
    } catch (e) {
      if (e instanceof TemplateLimitError) throw e;
      const msg = `error during tpl function execution for ${JSON.stringify(text)}: ${e instanceof Error ? e.message : String(e)}`;
      throw e instanceof TemplateError && e.userMessage !== undefined
        ? new TemplateError(msg, { userMessage: e.userMessage })
        : new FuncError(msg);
    }
  }

  argText(i: number): string {
    const a = this.callArgs[i];
    return a === undefined ? '' : nodeString(a);
  }

  private subExecute(env: ExecEnv, name: string, data: unknown): string {
    const tree = env.trees.get(name);
    if (tree === undefined) throw new TemplateError(`template: no template "${name}" associated with template "${this.tmplName}"`);
    const sub = new Executor(env, name, this.depth + 1);
    const dot = data === null ? undefined : data;
    sub.vars = [{ name: '$', value: dot }];
    sub.walk(dot, tree.root);
    return sub.out.toString();
  }

  private evalAndOr(dot: unknown, name: string, args: readonly ArgNode[], final: Final): unknown {
    let v: unknown = undefined;
    for (const a of args) {
      v = this.evalArg(dot, 'value', a);
      if (isTrue(v) === (name === 'or')) return v;
    }
    if (final !== MISSING) v = final;
    return v;
  }

  private evalArg(dot: unknown, typ: GoType | null, n: ArgNode): unknown {
    this.at(n);
    switch (n.type) {
      case 'dot':
        return this.validateType(dot, typ);
      case 'nil':
        if (typ === null || typ === 'any' || typ === 'value' || typ === 'map') return typ === 'value' ? undefined : null;
        return this.fail(`cannot assign nil to ${goTypeLabel(typ)}`);
      case 'field':
        return this.validateType(this.evalFieldChain(dot, dot, n, n.ident, [n], MISSING), typ);
      case 'variable':
        return this.validateType(this.evalVariable(dot, n, [], MISSING), typ);
      case 'pipe':
        return this.validateType(this.evalPipeline(dot, n), typ);
      case 'identifier':
        return this.validateType(this.evalFunction(dot, n.ident, n, null, [n], MISSING), typ);
      case 'chain':
        return this.validateType(this.evalChain(dot, n, [], MISSING), typ);
      default:
        break;
    }
    switch (typ) {
      case 'map':
        return this.fail(`can't handle ${nodeString(n)} for arg of type map[string]interface {}`);
      case 'bool':
        if (n.type === 'bool') return n.value;
        return this.fail(`expected bool; found ${nodeString(n)}`);
      case 'int':
        if (n.type === 'number' && n.int !== null) return n.int;
        return this.fail(`expected integer; found ${nodeString(n)}`);
      case 'float64':
        if (n.type === 'number' && n.float !== null) return n.float;
        return this.fail(`expected float; found ${nodeString(n)}`);
      case 'string':
        if (n.type === 'string') return n.text;
        return this.fail(`expected string; found ${nodeString(n)}`);
      default:
        switch (n.type) {
          case 'bool':
            return n.value;
          case 'number':
            return this.idealConstant(n);
          case 'string':
            return n.text;
        }
    }
  }

  /** Go's validateType: a value must be assignable to the parameter's type. */
  private validateType(value: unknown, typ: GoType | null): unknown {
    if (typ === null || typ === 'value') return value;
    if (value === undefined) {
      if (typ === 'any' || typ === 'map') return null;
      return this.fail(`invalid value; expected ${goTypeLabel(typ)}`);
    }
    if (typ === 'any') return value;
    const k = kindOf(value);
    const ok =
      (typ === 'string' && k === 'string') ||
      (typ === 'int' && k === 'int') ||
      (typ === 'float64' && k === 'float64') ||
      (typ === 'bool' && k === 'bool') ||
      (typ === 'map' && k === 'map' && !isStringMap(value));
    if (ok) return value;
    const got = value === null ? 'interface {}' : goTypeName(value);
    return this.fail(`wrong type for value; expected ${goTypeLabel(typ)}; got ${got}`);
  }
}

/** The name under which Helm's tpl parses its text (Helm names it after its root template, "gotpl"). */
export const TPL_NAME = 'gotpl';

function nameOf(v: VariableNode | undefined): string {
  return v?.ident[0] ?? '$';
}

function goTypeLabel(t: GoType): string {
  if (t === 'map') return 'map[string]interface {}';
  return t === 'any' ? 'interface {}' : t === 'value' ? 'reflect.Value' : t;
}

function nodeContext(n: ErrNode): string {
  switch (n.type) {
    case 'text':
      return n.text;
    case 'list':
      return '';
    case 'action':
      return `{{${nodeString(n.pipe)}}}`;
    case 'if':
    case 'range':
    case 'with':
      return `{{${n.type} ${nodeString(n.pipe)}}}`;
    case 'template':
      return `{{template "${n.name}"${n.pipe === null ? '' : ' ' + nodeString(n.pipe)}}}`;
    case 'break':
      return '{{break}}';
    case 'continue':
      return '{{continue}}';
    default:
      return nodeString(n);
  }
}

/** and/or are evaluated lazily by the executor; the specs here only carry their arity. */
export const AND_OR: ReadonlyMap<string, FuncSpec> = new Map<string, FuncSpec>([
  ['and', { params: ['value'], variadic: 'value', fn: () => undefined }],
  ['or', { params: ['value'], variadic: 'value', fn: () => undefined }],
]);
