/** One problem found in an object, before file/kind/name are attached. */
export interface Issue {
  /** Field path, e.g. `spec.http[0].route[1].weight`. */
  readonly path: string;
  readonly message: string;
}

/**
 * Collects every problem of one object: validators report all of them, not only the first.
 * Errors reject the object; warnings (istiod's `WrapWarning`: a deprecated field, a setting that
 * has no effect) are a separate channel: an object with only warnings is valid and served.
 */
export class Issues {
  readonly #list: Issue[] = [];
  readonly #warnings: Issue[] = [];

  add(path: string, message: string): void {
    this.#list.push({ path, message });
  }

  /** Adds `message` unless it is undefined; lets small checks return `string | undefined`. */
  check(path: string, message: string | undefined): void {
    if (message !== undefined) this.add(path, message);
  }

  /** A warning, never a rejection (istiod accepts the object and returns the text to kubectl). */
  warn(path: string, message: string): void {
    this.#warnings.push({ path, message });
  }

  /** Errors only: warnings do not count. */
  get count(): number {
    return this.#list.length;
  }

  get list(): readonly Issue[] {
    return this.#list;
  }

  get warnings(): readonly Issue[] {
    return this.#warnings;
  }
}

// Path builders: the JSON (camelCase) names users write, Kubernetes-style `[key]` for map entries.
export const field = (base: string, name: string): string => `${base}.${name}`;
export const index = (base: string, i: number): string => `${base}[${i}]`;
export const key = (base: string, k: string): string => `${base}[${k}]`;
