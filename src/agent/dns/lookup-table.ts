/**
 * The agent's answers for mesh hostnames, precomputed from the NameTable istiod (or meshpilot)
 * sends (istio-agent's LookupTable in pkg/dns/client/dns.go): A and AAAA records per name; for a
 * Kubernetes service also `name.ns.`, `name.ns.svc.` and, in the proxy's own namespace, `name.`;
 * and for each name the query a resolver sends first — the name with the first search domain
 * appended — as a CNAME to the name, which saves the walk through the other search domains.
 */
import { isIP } from 'node:net';
import type { NameTable } from '../../gen/dns/proto/nds_pb.js';
import { TYPE_A, TYPE_AAAA, TYPE_CNAME, type DnsRecord } from './wire.js';

/** Low, so a client that honours it soon asks again and gets the current address. */
export const ANSWER_TTL_SECONDS = 30;

export interface LookupContext {
  /** The proxy's namespace: its services answer to their bare name. */
  readonly proxyNamespace: string;
  /** `<namespace>.svc.<cluster domain>` (or without the namespace): the Kubernetes domain of the proxy. */
  readonly proxyDomain: string;
  /** resolv.conf `search` domains; only the first is expanded. */
  readonly searchDomains: readonly string[];
}

export interface Lookup {
  /** The name is a mesh name (answered here even when it has no record of the asked type). */
  readonly found: boolean;
  readonly answers: readonly DnsRecord[];
}

const withDot = (h: string): string => (h.endsWith('.') ? h : `${h}.`);

export class LookupTable {
  private readonly allHosts = new Set<string>();
  private readonly name4 = new Map<string, DnsRecord[]>();
  private readonly name6 = new Map<string, DnsRecord[]>();
  private readonly cname = new Map<string, DnsRecord[]>();

  private constructor() {}

  /** Hostnames (and expansions) answered from the table. */
  get size(): number {
    return this.allHosts.size;
  }

  static build(table: NameTable, ctx: LookupContext): LookupTable {
    const t = new LookupTable();
    const parts = ctx.proxyDomain.split('.').filter((p) => p !== '');
    // The proxy domain may start with the namespace; only the `svc.cluster.local` part matters.
    const domainParts = parts[0] === ctx.proxyNamespace ? parts.slice(1) : parts;
    const domain = domainParts.join('.');
    // Sorted, so that two entries claiming one name resolve the same way every time.
    for (const hostname of Object.keys(table.table).sort()) {
      const info = table.table[hostname]!;
      const v4 = info.ips.filter((ip) => isIP(ip) === 4);
      const v6 = info.ips.filter((ip) => isIP(ip) === 6);
      if (v4.length === 0 && v6.length === 0) continue;
      const names =
        info.registry === 'Kubernetes'
          ? kubernetesNames(hostname, info.shortname, info.namespace, info.altHosts, ctx.proxyNamespace, domain, domainParts[0])
          : new Set([withDot(hostname)]);
      t.add(names, v4, v6, ctx.searchDomains[0]);
    }
    return t;
  }

  private add(names: ReadonlySet<string>, v4: readonly string[], v6: readonly string[], search: string | undefined): void {
    for (const raw of names) {
      const h = raw.toLowerCase();
      this.allHosts.add(h);
      if (v4.length > 0)
        this.name4.set(
          h,
          v4.map((address) => ({ name: h, type: TYPE_A, ttl: ANSWER_TTL_SECONDS, address })),
        );
      if (v6.length > 0)
        this.name6.set(
          h,
          v6.map((address) => ({ name: h, type: TYPE_AAAA, ttl: ANSWER_TTL_SECONDS, address })),
        );
      if (search === undefined || h.endsWith(withDot(search).toLowerCase())) continue;
      const expanded = withDot(`${h}${search}`).toLowerCase();
      if (names.has(expanded)) continue;
      this.cname.set(expanded, [{ name: expanded, type: TYPE_CNAME, ttl: ANSWER_TTL_SECONDS, target: h }]);
      this.allHosts.add(expanded);
    }
  }

  /**
   * Answers for a lower-case name ending in a dot. Not found: not a mesh name (ask upstream). A
   * name under a wildcard host (`*.example.com`) answers with the wildcard's addresses under its
   * own name. Types other than A and AAAA are never answered here (istio-agent forwards them).
   */
  lookup(qtype: number, hostname: string): Lookup {
    const question = hostname;
    let name = hostname;
    let wildcard = false;
    let found = this.allHosts.has(name);
    if (!found) {
      const labels = name.split('.').filter((l) => l !== '');
      for (let i = 0; i < labels.length && !found; i++) {
        const candidate = `*.${labels.slice(i + 1).join('.')}.`;
        if (this.allHosts.has(candidate)) {
          found = true;
          wildcard = true;
          name = candidate;
        }
      }
    }
    if (!found) return { found: false, answers: [] };
    const cnames: DnsRecord[] = [];
    for (const cn of this.cname.get(name) ?? []) {
      if (cn.type !== TYPE_CNAME) continue;
      cnames.push({ ...cn, name: question });
      name = cn.target;
    }
    let ips: readonly DnsRecord[] | undefined;
    if (qtype === TYPE_A) ips = this.name4.get(name);
    else if (qtype === TYPE_AAAA) ips = this.name6.get(name);
    else return { found: false, answers: [] };
    if (!ips || ips.length === 0) return { found: true, answers: [] };
    // A wildcard's records carry the name asked (or, behind a CNAME, the CNAME's target).
    const owner = cnames.length > 0 ? name : question;
    const addresses = wildcard ? ips.map((r) => ({ ...r, name: owner })) : [...ips];
    return { found: true, answers: [...cnames, ...shuffled(addresses)] };
  }
}

/**
 * The names a Kubernetes service answers to (istio-agent's generateAltHosts): its FQDN; and when
 * it is in the proxy's cluster domain, `name.ns.`, `name.ns.<first domain label>.` and, in the
 * proxy's namespace, `name.`.
 */
function kubernetesNames(
  hostname: string,
  shortname: string,
  namespace: string,
  altHosts: readonly string[],
  proxyNamespace: string,
  domain: string,
  firstLabel: string | undefined,
): Set<string> {
  const out = new Set<string>();
  if (hostname.endsWith('.')) return out;
  out.add(`${hostname}.`);
  if (domain === '' || !hostname.endsWith(domain)) return out;
  out.add(`${shortname}.${namespace}.`);
  if (proxyNamespace === namespace) out.add(`${shortname}.`);
  out.add(`${shortname}.${namespace}.${firstLabel ?? ''}.`);
  for (const alt of altHosts) out.add(`${alt}.`);
  return out;
}

/** Addresses in random order: clients that take the first one spread over all (kube-dns does the same). */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
