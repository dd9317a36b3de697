/**
 * Network gateways named by a host name (a meshNetworks gateway `address`, a load balancer whose
 * ingress is a hostname, as on AWS), resolved by the control plane as istiod's
 * networkGatewayNameCache does with RESOLVE_HOSTNAME_GATEWAYS: the A and AAAA records of each name
 * from the resolv.conf servers (not /etc/hosts), sorted; refreshed when their TTL runs out (at
 * least 30 s, at most an hour); on a failure of both queries the last addresses stay. A name no
 * gateway uses any more is forgotten. A change of addresses is reported (a full push follows).
 */
import { Resolver } from 'node:dns/promises';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** istiod's MinGatewayTTL and MaxGatewayTTL. */
export const MIN_GATEWAY_TTL_MS = 30_000;
export const MAX_GATEWAY_TTL_MS = 3_600_000;

/** Answers that mean "no such records", not a failed server. */
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

export interface GatewayNameOptions {
  readonly logger: Logger;
  /** Told after a name's addresses changed (or a new name resolved): the gateways moved. */
  readonly onChange: () => void;
  /** DNS servers (`host:port`), else the system's (resolv.conf). */
  readonly servers?: readonly string[];
  /** Query time-out (istiod: 5 s). */
  readonly timeoutMs?: number;
  /** The shortest time between two resolutions of a name (istiod's MinGatewayTTL; tests shorten it). */
  readonly minTtlMs?: number;
}

interface Entry {
  addresses: readonly string[];
  timer: NodeJS.Timeout | undefined;
  /** Bumped when the name is dropped, so a resolution in flight for it is ignored. */
  generation: number;
}

export class GatewayNames {
  readonly #opts: GatewayNameOptions;
  readonly #resolver: Resolver;
  readonly #entries = new Map<string, Entry>();
  #current: ReadonlyMap<string, readonly string[]> = new Map();
  #generation = 0;
  #stopped = false;

  constructor(opts: GatewayNameOptions) {
    this.#opts = opts;
    this.#resolver = new Resolver({ timeout: opts.timeoutMs ?? 5000, tries: 1 });
    if (opts.servers && opts.servers.length > 0) this.#resolver.setServers([...opts.servers]);
  }

  /** The addresses of every watched name that resolved (a new map after each change). */
  current(): ReadonlyMap<string, readonly string[]> {
    return this.#current;
  }

  /** The names the gateways use now: new ones are resolved, dropped ones forgotten. */
  watch(names: ReadonlySet<string>): void {
    if (this.#stopped) return;
    let dropped = false;
    for (const [name, e] of this.#entries) {
      if (names.has(name)) continue;
      clearTimeout(e.timer);
      this.#entries.delete(name);
      dropped = true;
    }
    if (dropped) this.#publish(false);
    for (const name of names) {
      if (this.#entries.has(name)) continue;
      const e: Entry = { addresses: [], timer: undefined, generation: ++this.#generation };
      this.#entries.set(name, e);
      void this.#refresh(name, e);
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const e of this.#entries.values()) clearTimeout(e.timer);
    this.#entries.clear();
    this.#resolver.cancel();
  }

  async #refresh(name: string, e: Entry): Promise<void> {
    const generation = e.generation;
    const [v4, v6] = await Promise.all([this.#query(name, 4), this.#query(name, 6)]);
    if (this.#stopped || this.#entries.get(name) !== e || e.generation !== generation) return;
    const minTtlMs = this.#opts.minTtlMs ?? MIN_GATEWAY_TTL_MS;
    let ttlMs = minTtlMs;
    if (!v4.ok && !v6.ok) {
      // Both servers failed: keep what was known, and try again soon.
      this.#opts.logger.warn('could not resolve a network gateway host name; keeping its last addresses', {
        name,
        addresses: e.addresses,
        error: v4.error,
      });
    } else {
      const addresses = [...(v4.ok ? v4.addresses : []), ...(v6.ok ? v6.addresses : [])].sort();
      const ttls = [...(v4.ok ? v4.ttls : []), ...(v6.ok ? v6.ttls : [])];
      ttlMs = Math.min(MAX_GATEWAY_TTL_MS, Math.max(minTtlMs, ttls.length > 0 ? Math.min(...ttls) * 1000 : 0));
      if (addresses.length === 0) this.#opts.logger.warn('network gateway host name has no addresses', { name });
      if (!sameList(addresses, e.addresses)) {
        e.addresses = addresses;
        this.#publish(true);
      }
    }
    e.timer = setTimeout(() => void this.#refresh(name, e), ttlMs);
    e.timer.unref();
  }

  async #query(name: string, family: 4 | 6): Promise<{ ok: true; addresses: string[]; ttls: number[] } | { ok: false; error: string }> {
    try {
      const records =
        family === 4 ? await this.#resolver.resolve4(name, { ttl: true }) : await this.#resolver.resolve6(name, { ttl: true });
      return { ok: true, addresses: records.map((r) => r.address), ttls: records.map((r) => r.ttl) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (NO_RECORDS.has(code)) return { ok: true, addresses: [], ttls: [] };
      return { ok: false, error: `${code || 'error'}: ${errorMessage(err)}` };
    }
  }

  #publish(notify: boolean): void {
    const next = new Map<string, readonly string[]>();
    for (const [name, e] of this.#entries) if (e.addresses.length > 0) next.set(name, e.addresses);
    this.#current = next;
    if (notify) this.#opts.onChange();
  }
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
