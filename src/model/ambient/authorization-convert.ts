/**
 * AuthorizationPolicy → the ambient workload API's `istio.security.Authorization`, the L4 policy
 * ztunnel enforces, as istiod converts it (pilot/pkg/serviceregistry/ambient/authorization.go,
 * convertAuthorizationPolicy). ztunnel sees connections, not requests: HTTP attributes are left
 * out, which makes an ALLOW rule that names one match nothing and a DENY rule keep only its L4
 * part; the status istiod writes (the `ZtunnelAccepted` condition) says so, and is returned here.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { EmptySchema } from '@bufbuild/protobuf/wkt';
import type { Config } from '../../config/index.js';
import { DRY_RUN_ANNOTATION } from '../../config/constants.js';
import {
  AuthorizationPolicy_Action,
  type Condition,
  type Operation,
  type Rule,
  type Source,
} from '../../gen/security/v1beta1/authorization_policy_pb.js';
import {
  Action,
  AddressSchema,
  AuthorizationSchema,
  GroupSchema,
  MatchSchema,
  RulesSchema,
  ServiceAccountMatchSchema,
  StringMatchSchema,
  Scope,
  type Address,
  type Authorization,
  type Group,
  type Match,
  type Rules,
  type ServiceAccountMatch,
  type StringMatch,
} from '../../gen/workloadapi/security/authorization_pb.js';
import { compareIds } from '../../util/order.js';
import { parseGoBool } from '../../util/env.js';
import { ipAddressBytes, ipPrefixBytes } from '../../util/ip.js';

/** The `ZtunnelAccepted` condition istiod writes on a policy it did not take as is. */
export interface ZtunnelPolicyStatus {
  readonly reason: 'UnsupportedValue';
  readonly message: string;
}

export interface ConvertedAuthorizationPolicy {
  /** What ztunnel gets; undefined when nothing is sent (a targetRef policy, AUDIT/CUSTOM, dry run not enabled). */
  readonly authorization: Authorization | undefined;
  /** Why the policy was changed or refused; undefined when it was taken as is (or is not ztunnel's). */
  readonly status: ZtunnelPolicyStatus | undefined;
  /** A malformed `istio.io/dry-run` value (istiod logs it and treats the policy as enforced). */
  readonly warning?: string;
}

export interface AuthorizationConvertOptions {
  /**
   * AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY (istiod's default: off): send dry-run policies
   * with `dryRun` set. Off, a dry-run policy is not sent at all (older ztunnels would enforce it).
   */
  readonly dryRunPolicies?: boolean;
}

/** The condition keys ztunnel can evaluate; any other `when` key is an HTTP attribute to it. */
const L4_WHEN_KEYS = new Set(['source.ip', 'source.namespace', 'source.principal', 'destination.ip', 'destination.port']);

const HTTP_RULE_ADVICE = 'In ambient mode you must use a waypoint proxy to enforce HTTP rules.';
const DENY_NO_EFFECT =
  'After omitting unsupported HTTP attributes, this DENY policy has no enforceable rules at ztunnel and will have no effect. ' +
  'Deploy a waypoint proxy and use a targetRef to enforce this policy.';
const DENY_MIXED = 'DENY policy with HTTP attributes is enforced without the HTTP rules. This will be more restrictive than requested.';
const ALLOW_OMITTED = 'Within an ALLOW policy, rules matching HTTP attributes are omitted. This will be more restrictive than requested.';

const unsupported = (message: string): ZtunnelPolicyStatus => ({ reason: 'UnsupportedValue', message });

/** The policy as ztunnel gets it, with istiod's status; `rootNamespace` makes a policy without selector GLOBAL. */
export function convertAuthorizationPolicy(
  rootNamespace: string,
  policy: Config<'AuthorizationPolicy'>,
  options: AuthorizationConvertOptions = {},
): ConvertedAuthorizationPolicy {
  const { name, namespace, annotations } = policy.meta;
  const spec = policy.spec;
  let dryRun = false;
  let warning: string | undefined;
  const dryRunText = annotations[DRY_RUN_ANNOTATION] ?? '';
  if (dryRunText !== '') {
    const parsed = parseGoBool(dryRunText);
    if (parsed === undefined)
      warning = `AuthorizationPolicy ${namespace}/${name}: cannot parse ${DRY_RUN_ANNOTATION}: ${JSON.stringify(dryRunText)}`;
    dryRun = parsed ?? false;
  }
  const withWarning = (r: Omit<ConvertedAuthorizationPolicy, 'warning'>): ConvertedAuthorizationPolicy =>
    warning === undefined ? r : { ...r, warning };
  if (dryRun && !options.dryRunPolicies) {
    return withWarning({
      authorization: undefined,
      status: unsupported(
        `found policy "${namespace}/${name}" using dry-run annotation, but support for ambient dry-run authorizationPolicies isn't enabled`,
      ),
    });
  }
  // A policy bound to a waypoint, gateway or service is the waypoint's to enforce; ztunnel's status is not written either.
  if (spec.targetRefs.length > 0 || spec.targetRef !== undefined) return withWarning({ authorization: undefined, status: undefined });

  const scope = spec.selector !== undefined ? Scope.WORKLOAD_SELECTOR : namespace === rootNamespace ? Scope.GLOBAL : Scope.NAMESPACE;
  let action: Action;
  switch (spec.action) {
    case AuthorizationPolicy_Action.ALLOW:
      action = Action.ALLOW;
      break;
    case AuthorizationPolicy_Action.DENY:
      action = Action.DENY;
      break;
    default:
      return withWarning({
        authorization: undefined,
        status: unsupported(`ztunnel does not support the ${AuthorizationPolicy_Action[spec.action] ?? String(spec.action)} action`),
      });
  }

  const groups: Group[] = [];
  const httpAttributes = new Set<string>();
  for (const rule of spec.rules) {
    const converted = convertRule(action, rule, namespace);
    if (converted.rules) groups.push(create(GroupSchema, { rules: converted.rules }));
    for (const a of converted.httpAttributes) httpAttributes.add(a);
  }
  const authorization = create(AuthorizationSchema, { name, namespace, scope, action, groups, dryRun });
  if (httpAttributes.size === 0) return withWarning({ authorization, status: undefined });
  const consequence = action === Action.DENY ? (hasEffectiveRules(groups) ? DENY_MIXED : DENY_NO_EFFECT) : ALLOW_OMITTED;
  const found = [...httpAttributes].sort(compareIds).join(', ');
  return withWarning({
    authorization,
    status: unsupported(`ztunnel does not support HTTP attributes (found: ${found}). ${HTTP_RULE_ADVICE} ${consequence}`),
  });
}

/** Field names of an Operation ztunnel cannot see, in istiod's order. */
function httpOperationFields(op: Operation): string[] {
  const fields = ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths'] as const;
  return fields.filter((f) => op[f].length > 0);
}

/** Field names of a Source ztunnel cannot see. `trustDomains` is neither converted nor reported, as in istiod. */
function httpSourceFields(src: Source): string[] {
  const fields = ['remoteIpBlocks', 'notRemoteIpBlocks', 'requestPrincipals', 'notRequestPrincipals'] as const;
  return fields.filter((f) => src[f].length > 0);
}

const match = (init: MessageInitShape<typeof MatchSchema>): Match => create(MatchSchema, init);

/**
 * One rule → the Rules of its group (AND-ed): one for `to` (its operations OR-ed), one for
 * `from`, one per `when` condition. `rules` is undefined when the rule can never match: an ALLOW
 * rule naming an HTTP attribute. A DENY rule keeps its L4 part, and an HTTP-only part becomes an
 * empty match, which ztunnel skips (matches nothing).
 */
function convertRule(action: Action, rule: Rule, namespace: string): { rules: Rules[] | undefined; httpAttributes: string[] } {
  const httpAttributes: string[] = [];
  const toMatches = rule.to.map((to) => {
    const op = to.operation;
    if (!op) return match({});
    httpAttributes.push(...httpOperationFields(op));
    return match({ destinationPorts: ports(op.ports), notDestinationPorts: ports(op.notPorts) });
  });
  const fromMatches = rule.from.map((from) => {
    const src = from.source;
    if (!src) return match({});
    httpAttributes.push(...httpSourceFields(src));
    return match({
      sourceIps: addresses(src.ipBlocks),
      notSourceIps: addresses(src.notIpBlocks),
      namespaces: stringMatches(src.namespaces),
      notNamespaces: stringMatches(src.notNamespaces),
      serviceAccounts: serviceAccounts(src.serviceAccounts, namespace),
      notServiceAccounts: serviceAccounts(src.notServiceAccounts, namespace),
      principals: stringMatches(src.principals),
      notPrincipals: stringMatches(src.notPrincipals),
    });
  });
  const rules: Rules[] = [];
  if (toMatches.length > 0) rules.push(create(RulesSchema, { matches: toMatches }));
  if (fromMatches.length > 0) rules.push(create(RulesSchema, { matches: fromMatches }));
  for (const when of rule.when) {
    if (!L4_WHEN_KEYS.has(when.key)) httpAttributes.push(when.key);
    rules.push(create(RulesSchema, { matches: [conditionMatch(when)] }));
  }
  // An ALLOW rule with HTTP attributes never matches at ztunnel: it is left out (allowing less, never more).
  return { rules: action === Action.ALLOW && httpAttributes.length > 0 ? undefined : rules, httpAttributes };
}

/** A `when` condition on an L4 key as one match (values positive, notValues negated); an HTTP key gives an empty match. */
function conditionMatch(c: Condition): Match {
  const { values, notValues } = c;
  switch (c.key) {
    case 'source.namespace':
      return match({ namespaces: stringMatches(values), notNamespaces: stringMatches(notValues) });
    case 'source.principal':
      return match({ principals: stringMatches(values), notPrincipals: stringMatches(notValues) });
    case 'source.ip':
      return match({ sourceIps: addresses(values), notSourceIps: addresses(notValues) });
    case 'destination.port':
      return match({ destinationPorts: ports(values), notDestinationPorts: ports(notValues) });
    case 'destination.ip':
      return match({ destinationIps: addresses(values), notDestinationIps: addresses(notValues) });
    default:
      return match({});
  }
}

/** `*` → presence, `*foo` → suffix, `foo*` → prefix, else exact. */
export function stringMatches(values: readonly string[]): StringMatch[] {
  return values.map((v): StringMatch => {
    const matchType: StringMatch['matchType'] =
      v === '*'
        ? { case: 'presence', value: create(EmptySchema) }
        : v.startsWith('*')
          ? { case: 'suffix', value: v.slice(1) }
          : v.endsWith('*')
            ? { case: 'prefix', value: v.slice(0, -1) }
            : { case: 'exact', value: v };
    return create(StringMatchSchema, { matchType });
  });
}

/** `sa` (in the policy's namespace) or `ns/sa`. */
function serviceAccounts(values: readonly string[], namespace: string): ServiceAccountMatch[] {
  return values.map((v) => {
    const slash = v.indexOf('/');
    return create(ServiceAccountMatchSchema, {
      namespace: slash >= 0 ? v.slice(0, slash) : namespace,
      serviceAccount: slash >= 0 ? v.slice(slash + 1) : v,
    });
  });
}

/** Decimal ports; anything else (a port name, out of range) is left out, as istiod does. */
function ports(values: readonly string[]): number[] {
  return values.filter((v) => /^\d+$/.test(v) && Number(v) <= 65535).map(Number);
}

/** Addresses (full length) and CIDR prefixes (as written); unparsable ones are left out, as istiod does. */
function addresses(values: readonly string[]): Address[] {
  const out: Address[] = [];
  for (const v of values) {
    if (v === '') continue;
    if (v.includes('/')) {
      const prefix = ipPrefixBytes(v);
      if (prefix) out.push(create(AddressSchema, { address: prefix.address, length: prefix.bits }));
    } else {
      const address = ipAddressBytes(v);
      if (address) out.push(create(AddressSchema, { address, length: address.length * 8 }));
    }
  }
  return out;
}

function isEmptyMatch(m: Match): boolean {
  return (
    m.namespaces.length === 0 &&
    m.notNamespaces.length === 0 &&
    m.serviceAccounts.length === 0 &&
    m.notServiceAccounts.length === 0 &&
    m.principals.length === 0 &&
    m.notPrincipals.length === 0 &&
    m.sourceIps.length === 0 &&
    m.notSourceIps.length === 0 &&
    m.destinationIps.length === 0 &&
    m.notDestinationIps.length === 0 &&
    m.destinationPorts.length === 0 &&
    m.notDestinationPorts.length === 0 &&
    m.extensions.length === 0
  );
}

/**
 * Whether some group can fire at ztunnel: a group without rules matches everything; a group
 * matches nothing when one of its rules has only empty matches (ztunnel skips those).
 */
export function hasEffectiveRules(groups: readonly Group[]): boolean {
  return groups.some((g) => g.rules.length === 0 || g.rules.every((r) => r.matches.some((m) => !isEmptyMatch(m))));
}
