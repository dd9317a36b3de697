/**
 * A map bounded by the bytes its values stand for: the least recently used entries leave first
 * once the total passes `maxBytes`. For caches whose entries are large and short-lived (encoded
 * blocks of a push, decoded request lists), where a count bound says nothing about memory.
 */
export class BytesLru<K, V> {
  readonly #entries = new Map<K, { readonly value: V; readonly bytes: number }>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The value of `key` (now the most recently used), or undefined. */
  get(key: K): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.value;
  }

  /** Keeps `value` as standing for `bytes`, evicting the oldest entries to make room (one bigger than the bound is not kept). */
  set(key: K, value: V, bytes: number): void {
    if (bytes > this.maxBytes) return;
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#bytes -= old.bytes;
    }
    for (const [k, e] of this.#entries) {
      if (this.#bytes + bytes <= this.maxBytes) break;
      this.#entries.delete(k);
      this.#bytes -= e.bytes;
    }
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
  }
}
