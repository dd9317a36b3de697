/** AuthorizationPolicy checks, as istiod's ValidateAuthorizationPolicy makes them. */
import {
  AuthorizationPolicy_Action,
  type AuthorizationPolicy,
  type Condition,
  type Operation,
  type Rule,
  type Source,
} from '../../gen/security/v1beta1/authorization_policy_pb.js';
import { field, index, type Issues } from './issues.js';
import {
  checkAttributeKey,
  checkAttributeValue,
  checkAuthzPort,
  checkIPOrCIDR,
  checkNotEmpty,
  checkPathTemplate,
  checkServiceAccount,
  checkTrustDomain,
  MAX_SERVICE_ACCOUNTS,
} from './security-values.js';
import { checkSelectorAndTargets } from './security-targets.js';

type Check = (v: string) => string | undefined;
type StringListKey<T> = { [K in keyof T]: T[K] extends string[] ? K : never }[keyof T] & string;

const SOURCE_CHECKS: { readonly [K in StringListKey<Source>]: Check } = {
  principals: checkNotEmpty,
  notPrincipals: checkNotEmpty,
  requestPrincipals: checkNotEmpty,
  notRequestPrincipals: checkNotEmpty,
  namespaces: checkNotEmpty,
  notNamespaces: checkNotEmpty,
  serviceAccounts: checkServiceAccount,
  notServiceAccounts: checkServiceAccount,
  ipBlocks: (v) => checkNotEmpty(v) ?? checkIPOrCIDR(v),
  notIpBlocks: (v) => checkNotEmpty(v) ?? checkIPOrCIDR(v),
  remoteIpBlocks: (v) => checkNotEmpty(v) ?? checkIPOrCIDR(v),
  notRemoteIpBlocks: (v) => checkNotEmpty(v) ?? checkIPOrCIDR(v),
  trustDomains: checkTrustDomain,
  notTrustDomains: checkTrustDomain,
};

const OPERATION_CHECKS: { readonly [K in StringListKey<Operation>]: Check } = {
  hosts: checkNotEmpty,
  notHosts: checkNotEmpty,
  ports: (v) => checkNotEmpty(v) ?? checkAuthzPort(v),
  notPorts: (v) => checkNotEmpty(v) ?? checkAuthzPort(v),
  methods: checkNotEmpty,
  notMethods: checkNotEmpty,
  paths: (v) => checkNotEmpty(v) ?? checkPathTemplate(v),
  notPaths: (v) => checkNotEmpty(v) ?? checkPathTemplate(v),
};

// Identity fields the ext_authz (CUSTOM) filter cannot match on.
const CUSTOM_UNSUPPORTED_SOURCE: readonly StringListKey<Source>[] = [
  'namespaces',
  'notNamespaces',
  'serviceAccounts',
  'notServiceAccounts',
  'trustDomains',
  'notTrustDomains',
  'principals',
  'notPrincipals',
  'requestPrincipals',
  'notRequestPrincipals',
];
const CUSTOM_UNSUPPORTED_KEYS = new Set(['source.namespace', 'source.serviceAccount', 'source.trustDomain', 'source.principal']);
const NO_RULES =
  'action without `rules` is meaningless as it will never be triggered, add an empty rule `{}` if you want it be triggered for every request';

export function checkAuthorizationPolicy(ap: AuthorizationPolicy, issues: Issues): void {
  const spec = 'spec';
  checkSelectorAndTargets(issues, spec, ap);
  const provider = ap.actionDetail.case === 'provider' ? ap.actionDetail.value : undefined;
  const custom = ap.action === AuthorizationPolicy_Action.CUSTOM;
  if (custom) {
    // istiod checks the provider only when there are rules.
    if (ap.rules.length === 0) issues.add(field(spec, 'rules'), `CUSTOM ${NO_RULES}`);
    else if (!provider || provider.name === '') issues.add(field(field(spec, 'provider'), 'name'), '`provider.name` must not be empty');
  } else if (provider) {
    issues.add(
      field(spec, 'provider'),
      `\`provider\` must not be with non CUSTOM action, found ${AuthorizationPolicy_Action[ap.action] ?? ap.action}`,
    );
  }
  if (ap.action === AuthorizationPolicy_Action.DENY && ap.rules.length === 0) issues.add(field(spec, 'rules'), `DENY ${NO_RULES}`);
  ap.rules.forEach((rule, i) => {
    const path = index(field(spec, 'rules'), i);
    checkRule(issues, path, rule, custom);
    if (ap.action === AuthorizationPolicy_Action.DENY && deniesAllTcp(rule)) issues.warn(path, DENY_ALL_TCP_WARNING);
  });
}

const DENY_ALL_TCP_WARNING =
  'configured AuthorizationPolicy will deny all traffic to TCP ports under its scope due to the use of only HTTP attributes ' +
  'in a DENY rule; it is recommended to explicitly specify the port';

/** Source fields a TCP connection has (the rest are HTTP-only, so a rule on them matches any TCP connection). */
const TCP_SOURCE_FIELDS = [
  'principals',
  'notPrincipals',
  'ipBlocks',
  'notIpBlocks',
  'namespaces',
  'notNamespaces',
  'remoteIpBlocks',
  'notRemoteIpBlocks',
  'serviceAccounts',
  'notServiceAccounts',
] as const satisfies readonly StringListKey<Source>[];

/**
 * A DENY rule whose `from` (without `to`) or `to` names only HTTP attributes: on a TCP port those
 * cannot be checked, so the rule denies every connection (istiod warns, as it has for years).
 */
function deniesAllTcp(rule: Rule): boolean {
  const sources = rule.from.flatMap((f) => (f.source ? [f.source] : []));
  const operations = rule.to.flatMap((t) => (t.operation ? [t.operation] : []));
  const tcpInFrom = sources.some((src) => TCP_SOURCE_FIELDS.some((k) => src[k].length > 0));
  const tcpInTo = operations.some((op) => op.ports.length > 0 || op.notPorts.length > 0);
  return (sources.length > 0 && operations.length === 0 && !tcpInFrom) || (operations.length > 0 && !tcpInTo);
}

function checkRule(issues: Issues, path: string, rule: Rule, custom: boolean): void {
  rule.from.forEach((from, i) => {
    const p = index(field(path, 'from'), i);
    if (!from.source) issues.add(field(p, 'source'), '`from.source` must not be nil');
    else checkSource(issues, field(p, 'source'), from.source, custom);
  });
  rule.to.forEach((to, i) => {
    const p = index(field(path, 'to'), i);
    if (!to.operation) issues.add(field(p, 'operation'), '`to.operation` must not be nil');
    else checkOperation(issues, field(p, 'operation'), to.operation);
  });
  rule.when.forEach((c, i) => checkCondition(issues, index(field(path, 'when'), i), c, custom));
}

function checkSource(issues: Issues, path: string, src: Source, custom: boolean): void {
  const count = (keys: readonly StringListKey<Source>[]): number => keys.reduce((n, k) => n + src[k].length, 0);
  if (count(['principals', 'notPrincipals', 'namespaces', 'notNamespaces']) > 0 && count(['serviceAccounts', 'notServiceAccounts']) > 0) {
    issues.add(path, 'cannot set serviceAccounts with namespaces or principals');
  }
  const keys = Object.keys(SOURCE_CHECKS) as StringListKey<Source>[];
  if (count(keys) === 0) issues.add(path, '`from.source` must not be empty');
  for (const k of keys) {
    if ((k === 'serviceAccounts' || k === 'notServiceAccounts') && src[k].length > MAX_SERVICE_ACCOUNTS) {
      issues.add(field(path, k), `may not have more than ${MAX_SERVICE_ACCOUNTS} values`);
    }
    checkList(issues, field(path, k), src[k], SOURCE_CHECKS[k]);
  }
  if (custom) {
    for (const k of CUSTOM_UNSUPPORTED_SOURCE) {
      if (src[k].length > 0) issues.add(field(path, k), `from.source.${k} is currently not supported with CUSTOM action`);
    }
  }
}

function checkOperation(issues: Issues, path: string, op: Operation): void {
  const keys = Object.keys(OPERATION_CHECKS) as StringListKey<Operation>[];
  if (keys.every((k) => op[k].length === 0)) issues.add(path, '`to.operation` must not be empty');
  for (const k of keys) checkList(issues, field(path, k), op[k], OPERATION_CHECKS[k]);
}

function checkCondition(issues: Issues, path: string, c: Condition, custom: boolean): void {
  const keyError = checkAttributeKey(c.key);
  if (keyError) issues.add(field(path, 'key'), keyError);
  else if (custom && (CUSTOM_UNSUPPORTED_KEYS.has(c.key) || c.key.startsWith('request.auth.'))) {
    issues.add(field(path, 'key'), `${c.key} is currently not supported with CUSTOM action`);
  }
  if (c.key === '') return;
  if (c.values.length === 0 && c.notValues.length === 0) {
    issues.add(path, `at least one of \`values\` or \`notValues\` must be set for key ${c.key}`);
    return;
  }
  if (keyError) return;
  for (const list of ['values', 'notValues'] as const) {
    if (c.key === 'source.serviceAccount' && c[list].length > MAX_SERVICE_ACCOUNTS) {
      issues.add(field(path, list), `may not have more than ${MAX_SERVICE_ACCOUNTS} values`);
    }
    checkList(issues, field(path, list), c[list], (v) => checkAttributeValue(c.key, v));
  }
}

function checkList(issues: Issues, path: string, values: readonly string[], check: Check): void {
  values.forEach((v, i) => issues.check(index(path, i), check(v)));
}
