/** How template functions are declared: Go parameter types drive Go's argument checking and conversion. */

/**
 * A Go parameter type, as far as templates distinguish them:
 * 'any' = interface{} (a missing value arrives as null), 'value' = reflect.Value (arrives as is:
 * undefined for a missing value), 'int'/'float64'/'string'/'bool' accept only that kind,
 * 'map' = map[string]interface{} (a missing value arrives as null, a nil map).
 */
export type GoType = 'any' | 'value' | 'string' | 'int' | 'float64' | 'bool' | 'map';

/** What a function may ask of the running execution (Helm's include/tpl need the template set). */
export interface CallContext {
  /** Executes a named template of the set into a string (Helm's include). */
  executeTemplate(name: string, data: unknown): string;
  /** Parses text as a template sharing the set's definitions and executes it (Helm's tpl). */
  executeText(text: string, data: unknown): string;
  /** The source text of argument i (Go names the callee of `call` in its errors). */
  argText(i: number): string;
}

export interface FuncSpec {
  readonly params: readonly GoType[];
  /** Element type of a trailing variadic parameter. */
  readonly variadic?: GoType;
  readonly fn: (args: unknown[], ctx: CallContext) => unknown;
}

export type FuncMap = ReadonlyMap<string, FuncSpec>;

export function spec(params: readonly GoType[], fn: (args: unknown[], ctx: CallContext) => unknown, variadic?: GoType): FuncSpec {
  return variadic === undefined ? { params, fn } : { params, variadic, fn };
}
