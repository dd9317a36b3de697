/** Evaluation of a watch (bench/load-gen/protocol.ts ProxyFilter, Until) against what a proxy holds. */
import { TYPE } from '../../test/support/xds-resources.js';
import type { Held, Holdings } from './holdings.js';
import type { ProxyFilter, ProxyPlan, ShortType, Until } from './protocol.js';

export const TYPE_OF: Readonly<Record<ShortType, string>> = { lds: TYPE.LDS, rds: TYPE.RDS, cds: TYPE.CDS, eds: TYPE.EDS };
const SHORT: Readonly<Record<string, ShortType>> = { [TYPE.LDS]: 'lds', [TYPE.RDS]: 'rds', [TYPE.CDS]: 'cds', [TYPE.EDS]: 'eds' };

export function shortType(typeUrl: string): string {
  return SHORT[typeUrl] ?? typeUrl;
}

/** Does a proxy (its plan and what it holds now) match the filter? */
export function matchesFilter(plan: ProxyPlan, held: Holdings, f: ProxyFilter): boolean {
  if (f.kinds && !f.kinds.includes(plan.kind)) return false;
  if (f.namespaces && !f.namespaces.includes(plan.namespace)) return false;
  const h = f.holding;
  if (!h) return true;
  const bytes = h.bytes !== undefined ? Buffer.from(h.bytes) : undefined;
  for (const r of held.of(TYPE_OF[h.type]).values()) {
    if (h.name !== undefined && !r.name.includes(h.name)) continue;
    if (bytes && !r.includes(bytes)) continue;
    return true;
  }
  return false;
}

/** One proxy's progress towards `until`, from what it held when the watch began. */
export class WatchState {
  readonly typeUrl: string;
  private readonly contains: Buffer[];
  private readonly lacks: Buffer[];
  private readonly baseline: ReadonlyMap<string, Held> | undefined;
  convergedAt: number | undefined;

  constructor(
    private readonly until: Until,
    held: Holdings,
  ) {
    this.typeUrl = TYPE_OF[until.type];
    this.contains = (until.contains ?? []).map((s) => Buffer.from(s));
    this.lacks = (until.lacks ?? []).map((s) => Buffer.from(s));
    this.baseline = until.changed ? new Map(this.scoped(held)) : undefined;
  }

  private *scoped(held: Holdings): Generator<[string, Held]> {
    for (const [name, r] of held.of(this.typeUrl)) if (this.until.scope === undefined || name.includes(this.until.scope)) yield [name, r];
  }

  /** Checks the condition after a response of this watch's type; records `at` the first time it holds. */
  check(held: Holdings, at: number): boolean {
    if (this.convergedAt !== undefined) return true;
    const scoped = [...this.scoped(held)].map(([, r]) => r);
    if (!this.contains.every((n) => scoped.some((r) => r.includes(n)))) return false;
    if (this.lacks.some((n) => scoped.some((r) => r.includes(n)))) return false;
    if (this.baseline && !this.differs(held)) return false;
    this.convergedAt = at;
    return true;
  }

  private differs(held: Holdings): boolean {
    const now = new Map(this.scoped(held));
    if (now.size !== this.baseline?.size) return true;
    for (const [name, r] of now) if (this.baseline.get(name) !== r) return true;
    return false;
  }
}
