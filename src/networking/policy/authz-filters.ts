import type { FilterSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { RBAC_Action, type RBACSchema as RbacRulesSchema } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import { RBACSchema as HttpRbacSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import type { HttpFilterSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { RBACSchema as NetworkRbacSchema } from '../../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { AuthorizationPolicy_Action } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import type { Config } from '../../config/index.js';
import { MeshError } from '../../util/errors.js';
import { parseGoBool } from '../../util/env.js';
import { DRY_RUN_ANNOTATION } from '../../config/constants.js';
import { packAny, type Init } from '../common.js';
import { generatePolicy, migrateTrustDomain, ruleModel, RuleSkipped, type PolicyInit } from './authz-model.js';
import { TrustDomainBundle } from './trust-domain.js';

export const HTTP_RBAC_FILTER = 'envoy.filters.http.rbac';
export const NETWORK_RBAC_FILTER = 'envoy.filters.network.rbac';
/** istiod's stat prefix of the network RBAC filter (the HTTP one has none). */
export const NETWORK_RBAC_STAT_PREFIX = 'tcp.';
export { DRY_RUN_ANNOTATION };
const SHADOW_ALLOW_PREFIX = 'istio_dry_run_allow_';
const SHADOW_DENY_PREFIX = 'istio_dry_run_deny_';

type HttpFilterInit = Init<typeof HttpFilterSchema>;
type NetworkFilterInit = Init<typeof FilterSchema>;
type RbacRulesInit = Init<typeof RbacRulesSchema>;
type AuthzPolicy = Config<'AuthorizationPolicy'>;

/** The ALLOW, DENY and AUDIT policies that apply to one workload (CUSTOM goes to ext_authz, not here). */
export interface AuthzPolicies {
  readonly allow?: readonly AuthzPolicy[];
  readonly deny?: readonly AuthzPolicy[];
  readonly audit?: readonly AuthzPolicy[];
}

/** A rule istiod would leave out of the generated config, and why. */
export interface SkippedRule {
  /** `ns[<ns>]-policy[<name>]-rule[<i>]` */
  readonly rule: string;
  readonly reason: string;
}

export interface AuthzOptions {
  /** The mesh trust domain (MeshConfig.trustDomain). */
  readonly trustDomain: string;
  readonly trustDomainAliases?: readonly string[];
  /** Told of each rule left out (istiod logs these); the rest of the policy still applies. */
  readonly onSkippedRule?: (skipped: SkippedRule) => void;
  /** Told of a malformed `istio.io/dry-run` annotation (then treated as false, as istiod does). */
  readonly onWarning?: (message: string) => void;
}

/** The Envoy RBAC policy name of rule `i` of a policy, as istiod names it. */
export const rbacPolicyName = (namespace: string, name: string, i: number): string => `ns[${namespace}]-policy[${name}]-rule[${i}]`;

/** An ALLOW policy without rules allows nothing: this never matches. */
function matchNever(): PolicyInit {
  return {
    permissions: [{ rule: { case: 'notRule', value: { rule: { case: 'any', value: true } } } }],
    principals: [{ identifier: { case: 'notId', value: { identifier: { case: 'any', value: true } } } }],
  };
}

function isDryRun(p: AuthzPolicy, opts: AuthzOptions): boolean {
  const v = p.meta.annotations[DRY_RUN_ANNOTATION];
  if (v === undefined) return false;
  const b = parseGoBool(v);
  if (b === undefined)
    opts.onWarning?.(
      `AuthorizationPolicy ${p.meta.namespace}/${p.meta.name}: failed to parse the value of ${DRY_RUN_ANNOTATION}: ${JSON.stringify(v)}`,
    );
  return b ?? false;
}

const ISTIO_ACTION: Record<'allow' | 'deny' | 'audit', AuthorizationPolicy_Action> = {
  allow: AuthorizationPolicy_Action.ALLOW,
  deny: AuthorizationPolicy_Action.DENY,
  audit: AuthorizationPolicy_Action.AUDIT,
};
const RBAC_ACTION: Record<'allow' | 'deny' | 'audit', RBAC_Action> = {
  allow: RBAC_Action.ALLOW,
  deny: RBAC_Action.DENY,
  audit: RBAC_Action.LOG,
};

interface BuiltRules {
  readonly rules: RbacRulesInit | undefined;
  readonly shadowRules: RbacRulesInit | undefined;
}

/** The enforced and dry-run RBAC rules of one action, or undefined when it has no policy. */
function buildRules(
  group: 'allow' | 'deny' | 'audit',
  policies: readonly AuthzPolicy[],
  forTCP: boolean,
  opts: AuthzOptions,
): BuiltRules | undefined {
  if (policies.length === 0) return undefined;
  const action = RBAC_ACTION[group];
  const bundle = new TrustDomainBundle(opts.trustDomain, opts.trustDomainAliases);
  const enforced: Record<string, PolicyInit> = {};
  const shadow: Record<string, PolicyInit> = {};
  let hasEnforced = false;
  let hasShadow = false;
  for (const p of policies) {
    if (p.spec.action !== ISTIO_ACTION[group]) {
      throw new MeshError(
        'INVALID_ARGUMENT',
        `AuthorizationPolicy ${p.meta.namespace}/${p.meta.name} has action ${AuthorizationPolicy_Action[p.spec.action]} but was passed as ${group}`,
      );
    }
    const dryRun = isDryRun(p, opts);
    if (dryRun) hasShadow = true;
    else hasEnforced = true;
    const target = dryRun ? shadow : enforced;
    p.spec.rules.forEach((rule, i) => {
      const name = rbacPolicyName(p.meta.namespace, p.meta.name, i);
      try {
        const model = ruleModel(rule, p.meta.namespace);
        migrateTrustDomain(model, bundle);
        target[name] = generatePolicy(model, forTCP, action);
      } catch (err) {
        if (!(err instanceof RuleSkipped)) throw err;
        opts.onSkippedRule?.({ rule: name, reason: err.message });
      }
    });
    if (p.spec.rules.length === 0) target[rbacPolicyName(p.meta.namespace, p.meta.name, 0)] = matchNever();
  }
  return {
    rules: hasEnforced ? { action, policies: enforced } : undefined,
    shadowRules: hasShadow ? { action, policies: shadow } : undefined,
  };
}

/**
 * istiod sets this even without shadow rules, from the shadow action's zero value (ALLOW); the
 * AUDIT action has none.
 */
function shadowStatPrefix(shadow: RbacRulesInit | undefined): string {
  const action = shadow?.action ?? RBAC_Action.ALLOW;
  if (action === RBAC_Action.ALLOW) return SHADOW_ALLOW_PREFIX;
  if (action === RBAC_Action.DENY) return SHADOW_DENY_PREFIX;
  return '';
}

const GROUPS = ['audit', 'deny', 'allow'] as const;

function eachGroup<T>(policies: AuthzPolicies, forTCP: boolean, opts: AuthzOptions, f: (b: BuiltRules) => T): T[] {
  const out: T[] = [];
  // Envoy runs the filters in order: AUDIT (log only), then DENY, then ALLOW, as istiod emits them.
  for (const group of GROUPS) {
    const built = buildRules(group, policies[group] ?? [], forTCP, opts);
    if (built) out.push(f(built));
  }
  return out;
}

/**
 * The HTTP RBAC filters of an inbound or gateway HTTP chain: one per action present, in istiod's
 * order. With any ALLOW policy a request matching none of its rules is denied (ALLOW RBAC
 * semantics); an ALLOW policy without rules contributes a never-matching policy.
 */
export function buildHttpRbacFilters(policies: AuthzPolicies, opts: AuthzOptions): HttpFilterInit[] {
  return eachGroup(policies, false, opts, (b) => ({
    name: HTTP_RBAC_FILTER,
    configType: {
      case: 'typedConfig',
      value: packAny(HttpRbacSchema, {
        ...(b.rules ? { rules: b.rules } : {}),
        ...(b.shadowRules ? { shadowRules: b.shadowRules } : {}),
        shadowRulesStatPrefix: shadowStatPrefix(b.shadowRules),
      }),
    },
  }));
}

/**
 * The network RBAC filters of a TCP chain. HTTP-only fields (hosts, methods, paths,
 * requestPrincipals, request.headers / request.auth.* conditions) cannot be checked on TCP, so,
 * as istiod does: an ALLOW rule using any of them is dropped whole (so it allows nothing on TCP);
 * a DENY or AUDIT rule keeps its other fields and only loses those (so a DENY rule of HTTP-only
 * fields denies every TCP connection).
 */
export function buildNetworkRbacFilters(policies: AuthzPolicies, opts: AuthzOptions): NetworkFilterInit[] {
  return eachGroup(policies, true, opts, (b) => ({
    name: NETWORK_RBAC_FILTER,
    configType: {
      case: 'typedConfig',
      value: packAny(NetworkRbacSchema, {
        ...(b.rules ? { rules: b.rules } : {}),
        ...(b.shadowRules ? { shadowRules: b.shadowRules } : {}),
        statPrefix: NETWORK_RBAC_STAT_PREFIX,
        shadowRulesStatPrefix: shadowStatPrefix(b.shadowRules),
      }),
    },
  }));
}
