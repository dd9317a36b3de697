/**
 * What a simulated proxy holds: per type, resource name → resource. Resources are interned by
 * content across every proxy of the process (meshpilot sends the same bytes to many proxies), so
 * thousands of proxies cost one copy of each distinct resource, the response buffers are released,
 * and anything derived from a resource (its name, the names it leads to) is computed once.
 */
import { hash } from 'node:crypto';
import { resourceName } from './resource-wire.js';
import type { Resp } from './proxy-stream.js';

/** One distinct resource (type, content), shared by every proxy holding it. Identity = content. */
export class Held {
  private derived: Map<string, unknown> | undefined;
  constructor(
    readonly name: string,
    readonly bytes: Buffer,
  ) {}

  /** `fn(bytes)` computed once per distinct resource and remembered under `key`. */
  memo<T>(key: string, fn: (bytes: Buffer) => T): T {
    this.derived ??= new Map();
    if (this.derived.has(key)) return this.derived.get(key) as T;
    const v = fn(this.bytes);
    this.derived.set(key, v);
    return v;
  }

  includes(needle: Buffer): boolean {
    return this.bytes.includes(needle);
  }
}

const table = new Map<string, Held>();
/** The resource last interned under each type and name: most proxies receive the same bytes, which compare faster than they hash. */
const latest = new Map<string, Held>();

function intern(typeUrl: string, name: string | undefined, value: Uint8Array): Held {
  const n = name ?? resourceName(typeUrl, value);
  const nameKey = `${typeUrl}|${n}`;
  const last = latest.get(nameKey);
  if (last && last.bytes.equals(value)) return last;
  const key = `${typeUrl}|${hash('sha1', value, 'base64')}`;
  let h = table.get(key);
  if (!h) {
    // A copy: the view would keep the whole response buffer alive.
    h = new Held(n, Buffer.from(value));
    table.set(key, h);
  }
  latest.set(nameKey, h);
  return h;
}

/** Distinct resources interned so far (for the load generator's own report). */
export function internedCount(): number {
  return table.size;
}

export class Holdings {
  private readonly byType = new Map<string, Map<string, Held>>();
  /** Types a response was received for at least once. */
  private readonly seen = new Set<string>();

  of(typeUrl: string): ReadonlyMap<string, Held> {
    return this.map(typeUrl);
  }

  received(typeUrl: string): boolean {
    return this.seen.has(typeUrl);
  }

  private map(typeUrl: string): Map<string, Held> {
    let m = this.byType.get(typeUrl);
    if (!m) this.byType.set(typeUrl, (m = new Map()));
    return m;
  }

  /**
   * Applies a response (SotW full sets replace the type's holdings; Delta removals delete).
   * Returns whether it changed anything (false: every resource was already held as sent).
   */
  apply(r: Resp): boolean {
    const first = !this.seen.has(r.typeUrl);
    this.seen.add(r.typeUrl);
    const m = this.map(r.typeUrl);
    const before = r.full ? new Map(m) : undefined;
    if (r.full) m.clear();
    let changed = first;
    for (const n of r.removed) changed = m.delete(n) || changed;
    for (const it of r.items) {
      const h = intern(r.typeUrl, it.name, it.value);
      if ((before ?? m).get(h.name) !== h) changed = true;
      m.set(h.name, h);
    }
    return changed || (before !== undefined && before.size !== m.size);
  }

  /** Every name of `names` is held for `typeUrl`. */
  holdsAll(typeUrl: string, names: readonly string[]): boolean {
    const m = this.byType.get(typeUrl);
    return names.every((n) => m?.has(n) ?? false);
  }
}
