/** The rule-set model shared by the builder, the restore renderer and the runner. */

export type Table = 'filter' | 'nat' | 'mangle' | 'raw';

export interface Rule {
  readonly table: Table;
  readonly chain: string;
  /** Set for `-I chain N`; absent for `-A chain`. */
  readonly insertAt?: number;
  /** Everything after `-A chain` / `-I chain N`, one token per element. */
  readonly spec: readonly string[];
}

export interface RuleSet {
  readonly ipv4: readonly Rule[];
  /** Empty unless the config enables IPv6 (Istio then leaves ip6tables alone). */
  readonly ipv6: readonly Rule[];
  readonly enableIPv6: boolean;
  /** TPROXY inbound needs policy routing: `ip rule fwmark MARK lookup TABLE` + a local default route. */
  readonly tproxyRoute?: { readonly mark: number; readonly table: number };
}

/** iptables' built-in chains and verdicts: never created or removed by us. */
export const BUILT_IN = new Set(['INPUT', 'OUTPUT', 'FORWARD', 'PREROUTING', 'POSTROUTING', 'ACCEPT', 'RETURN', 'DROP']);

/** Every chain this project creates starts with this (Istio's layout, so Istio's leftovers are ours too). */
export const OWN_CHAIN_PREFIX = 'ISTIO_';

export const CHAINS = {
  INBOUND: 'ISTIO_INBOUND',
  IN_REDIRECT: 'ISTIO_IN_REDIRECT',
  OUTPUT: 'ISTIO_OUTPUT',
  OUTPUT_DNS: 'ISTIO_OUTPUT_DNS',
  REDIRECT: 'ISTIO_REDIRECT',
  DIVERT: 'ISTIO_DIVERT',
  TPROXY: 'ISTIO_TPROXY',
  DROP: 'ISTIO_DROP',
} as const;

/** The jump target of a rule when `-j X` ends it (how Istio finds chains to declare). */
export function finalJumpTarget(spec: readonly string[]): string | undefined {
  return spec.length >= 2 && spec[spec.length - 2] === '-j' ? spec[spec.length - 1] : undefined;
}

/** Any `-j`/`-g` target in the spec. */
export function jumpTarget(spec: readonly string[]): string | undefined {
  for (let i = 0; i < spec.length - 1; i++) if (spec[i] === '-j' || spec[i] === '-g') return spec[i + 1];
  return undefined;
}
