import { RBAC_Action, type PolicySchema } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import type { Rule } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import type { Init } from '../common.js';
import * as g from './authz-generators.js';
import type { Generator, PermissionInit, PrincipalInit } from './authz-generators.js';
import type { TrustDomainBundle } from './trust-domain.js';
import { MeshError } from '../../util/errors.js';

export type PolicyInit = Init<typeof PolicySchema>;

/** A rule that cannot be generated at all (unknown attribute, or an ALLOW value it cannot express). */
export class RuleSkipped extends MeshError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'RuleSkipped';
  }
}

interface Entry<T> {
  readonly key: string;
  values: readonly string[];
  notValues: readonly string[];
  readonly gen: Generator<T>;
}

type Entries<T> = Entry<T>[];

function entry<T>(gen: Generator<T>, key: string, values: readonly string[], notValues: readonly string[]): Entry<T>[] {
  return values.length === 0 && notValues.length === 0 ? [] : [{ key, values, notValues, gen }];
}

/** A `when` condition: which side of the RBAC policy it lands on, and its generator. */
function conditionEntry(
  key: string,
  values: readonly string[],
  notValues: readonly string[],
  policyNamespace: string,
): { permission: Entries<PermissionInit> } | { principal: Entries<PrincipalInit> } {
  const perm = (gen: Generator<PermissionInit>) => ({ permission: entry(gen, key, values, notValues) });
  const prin = (gen: Generator<PrincipalInit>) => ({ principal: entry(gen, key, values, notValues) });
  switch (key) {
    case 'destination.ip':
      return perm(g.destIp);
    case 'destination.port':
      return perm(g.destPort);
    case 'connection.sni':
      return perm(g.connSni);
    case 'source.ip':
      return prin(g.srcIp);
    case 'remote.ip':
      return prin(g.remoteIp);
    case 'source.namespace':
      return prin(g.srcNamespace);
    case 'source.trustDomain':
      return prin(g.srcTrustDomain);
    case 'source.serviceAccount':
      return prin(g.srcServiceAccount(policyNamespace));
    case 'source.principal':
      return prin(g.srcPrincipal);
    case 'request.auth.principal':
      return prin(g.requestPrincipals);
    case 'request.auth.audiences':
      return prin(g.requestAudiences);
    case 'request.auth.presenter':
      return prin(g.requestPresenter);
  }
  if (key.startsWith('experimental.envoy.filters.')) return perm(g.envoyFilterMetadata);
  if (key.startsWith('request.headers')) return prin(g.requestHeader);
  if (key.startsWith('request.auth.claims')) return prin(g.requestClaims);
  throw new RuleSkipped(`unknown attribute ${key}`);
}

/**
 * One Istio rule as the two sides of an Envoy RBAC policy (istiod's authz model): one principal per
 * `from` (OR-ed by Envoy), one permission per `to`, each an AND of its fields; `when` conditions
 * are AND-ed into every principal or permission, by attribute. Field order matches istiod's output.
 */
export interface RuleModel {
  readonly permissions: Entries<PermissionInit>[];
  readonly principals: Entries<PrincipalInit>[];
}

export function ruleModel(rule: Rule, policyNamespace: string): RuleModel {
  const basePermission: Entries<PermissionInit> = [];
  const basePrincipal: Entries<PrincipalInit> = [];
  for (const when of rule.when) {
    const side = conditionEntry(when.key, when.values, when.notValues, policyNamespace);
    if ('permission' in side) basePermission.push(...side.permission);
    else basePrincipal.push(...side.principal);
  }

  const principals = rule.from.map((from) => {
    const s = from.source;
    if (!s) return [...basePrincipal];
    return [
      ...entry(g.srcPrincipal, 'source.principal', s.principals, s.notPrincipals),
      ...entry(g.requestPrincipals, 'request.auth.principal', s.requestPrincipals, s.notRequestPrincipals),
      ...entry(g.srcServiceAccount(policyNamespace), 'source.serviceAccount', s.serviceAccounts, s.notServiceAccounts),
      ...entry(g.srcTrustDomain, 'source.trustDomain', s.trustDomains, s.notTrustDomains),
      ...entry(g.srcNamespace, 'source.namespace', s.namespaces, s.notNamespaces),
      ...entry(g.remoteIp, 'remote.ip', s.remoteIpBlocks, s.notRemoteIpBlocks),
      ...entry(g.srcIp, 'source.ip', s.ipBlocks, s.notIpBlocks),
      ...basePrincipal,
    ];
  });

  const permissions = rule.to.map((to) => {
    const o = to.operation;
    if (!o) return [...basePermission];
    return [
      ...entry(g.hosts, 'hosts', o.hosts, o.notHosts),
      ...entry(g.methods, 'methods', o.methods, o.notMethods),
      ...entry(g.paths, 'paths', o.paths, o.notPaths),
      ...entry(g.destPort, 'ports', o.ports, o.notPorts),
      ...basePermission,
    ];
  });

  return {
    permissions: permissions.length > 0 ? permissions : [basePermission],
    principals: principals.length > 0 ? principals : [basePrincipal],
  };
}

/**
 * Principals naming a trust domain match it under every trust domain of the mesh bundle. Entries
 * from `when` are shared by every `from`; each is rewritten once (istiod rewrites them once per
 * `from`, which only repeats identical alternatives).
 */
export function migrateTrustDomain(model: RuleModel, bundle: TrustDomainBundle): void {
  const seen = new Set<Entry<PrincipalInit>>();
  for (const list of model.principals) {
    for (const e of list) {
      if (seen.has(e)) continue;
      seen.add(e);
      if (e.key === 'source.principal') {
        e.values = bundle.replaceTrustDomainAliases(e.values);
        e.notValues = bundle.replaceTrustDomainAliases(e.notValues);
      } else if (e.key === 'source.trustDomain') {
        e.values = bundle.expandTrustDomainAliases(e.values);
        e.notValues = bundle.expandTrustDomainAliases(e.notValues);
      }
    }
  }
}

/**
 * istiod's rule for a value it cannot express (HTTP-only on a TCP chain, a bad IP or port): an
 * ALLOW rule is dropped whole (a narrower allow), while for DENY and AUDIT only that value is
 * dropped and the rest of the rule still applies (a wider deny: if every field of a DENY rule is
 * dropped, it matches everything).
 */
function tolerate(action: RBAC_Action, err: unknown): void {
  if (action === RBAC_Action.ALLOW || !(err instanceof g.AttributeError)) throw err;
}

function generateSide<T>(e: Entry<T>, forTCP: boolean, action: RBAC_Action, or: (xs: T[]) => T, not: (x: T) => T): T[] {
  const attempt = (f: () => T): T | undefined => {
    try {
      return f();
    } catch (err) {
      tolerate(action, err);
      return undefined;
    }
  };
  const gen = e.gen;
  const out: T[] = [];
  if (gen.kind === 'whole') {
    const yes = e.values.length > 0 ? attempt(() => gen.build(e.key, e.values, forTCP)) : undefined;
    if (yes !== undefined) out.push(yes);
    const no = e.notValues.length > 0 ? attempt(() => gen.build(e.key, e.notValues, forTCP)) : undefined;
    if (no !== undefined) out.push(not(no));
    return out;
  }
  const each = (vs: readonly string[]) => vs.map((v) => attempt(() => gen.build(e.key, v, forTCP))).filter((x): x is T => x !== undefined);
  const yes = each(e.values);
  if (yes.length > 0) out.push(or(yes));
  const no = each(e.notValues);
  if (no.length > 0) out.push(not(or(no)));
  return out;
}

/** The Envoy RBAC policy of one rule; throws RuleSkipped when istiod would skip the rule. */
export function generatePolicy(model: RuleModel, forTCP: boolean, action: RBAC_Action): PolicyInit {
  try {
    const permissions = model.permissions.map((list) => {
      const and = list.flatMap((e) => generateSide(e, forTCP, action, g.permissionOr, g.permissionNot));
      return g.permissionAnd(and.length > 0 ? and : [g.permissionAny()]);
    });
    const principals = model.principals.map((list) => {
      const and = list.flatMap((e) => generateSide(e, forTCP, action, g.principalOr, g.principalNot));
      return g.principalAnd(and.length > 0 ? and : [g.principalAny()]);
    });
    return { permissions, principals };
  } catch (err) {
    if (err instanceof g.AttributeError) throw new RuleSkipped(err.message, { cause: err });
    throw err;
  }
}
