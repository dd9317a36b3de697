/**
 * AuthorizationPolicy → ztunnel's istio.security.Authorization: YAML in, the whole Authorization
 * as protobuf JSON and istiod's ZtunnelAccepted status out (facts from istiod's
 * pilot/pkg/serviceregistry/ambient/authorization.go and its tests; the cases are ours).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { AuthorizationSchema } from '../../gen/workloadapi/security/authorization_pb.js';
import { ap, configOf, ROOT } from '../../../test/support/ambient-policy-fixtures.js';
import { convertAuthorizationPolicy, type AuthorizationConvertOptions } from './authorization-convert.js';

const PRESENCE = { presence: {} };
const HTTP = 'ztunnel does not support HTTP attributes (found: %s). In ambient mode you must use a waypoint proxy to enforce HTTP rules. ';
const ALLOW_OMITTED = 'Within an ALLOW policy, rules matching HTTP attributes are omitted. This will be more restrictive than requested.';
const DENY_MIXED = 'DENY policy with HTTP attributes is enforced without the HTTP rules. This will be more restrictive than requested.';
const DENY_NO_EFFECT =
  'After omitting unsupported HTTP attributes, this DENY policy has no enforceable rules at ztunnel and will have no effect. ' +
  'Deploy a waypoint proxy and use a targetRef to enforce this policy.';
const httpStatus = (found: string, consequence: string): string => HTTP.replace('%s', found) + consequence;

interface Case {
  readonly name: string;
  readonly yaml: string;
  readonly options?: AuthorizationConvertOptions;
  /** The Authorization as protobuf JSON; undefined when nothing is sent to ztunnel. */
  readonly want: JsonValue | undefined;
  /** The ZtunnelAccepted condition message, when istiod writes one. */
  readonly status?: string;
  readonly warning?: RegExp;
}

const CASES: readonly Case[] = [
  {
    name: 'root namespace, no selector: GLOBAL; wildcards become presence, suffix and prefix matches',
    yaml: ap(
      ROOT,
      'mesh-allow',
      'rules:\n- from:\n  - source:\n      principals: ["*", "*/sa/admin", "cluster.local/ns/ops/*", "td/ns/a/sa/b"]',
    ),
    want: {
      name: 'mesh-allow',
      namespace: ROOT,
      groups: [
        {
          rules: [
            {
              matches: [
                {
                  principals: [PRESENCE, { suffix: '/sa/admin' }, { prefix: 'cluster.local/ns/ops/' }, { exact: 'td/ns/a/sa/b' }],
                },
              ],
            },
          ],
        },
      ],
    },
  },
  {
    name: 'namespace, no selector: NAMESPACE; DENY with from (ipBlocks, namespaces and their not_ forms) and to (ports, not ports)',
    yaml: ap(
      'shop',
      'deny-ops',
      [
        'action: DENY',
        'rules:',
        '- from:',
        '  - source: {namespaces: [ops, "test-*"], notNamespaces: [shop], ipBlocks: [10.0.0.0/8, 192.168.1.7], notIpBlocks: [10.1.2.3/32]}',
        '  - source: {notPrincipals: ["*"]}',
        '  to:',
        '  - operation: {ports: ["8080", "9090"], notPorts: ["15021"]}',
      ].join('\n'),
    ),
    want: {
      name: 'deny-ops',
      namespace: 'shop',
      scope: 'NAMESPACE',
      action: 'DENY',
      groups: [
        {
          rules: [
            { matches: [{ destinationPorts: [8080, 9090], notDestinationPorts: [15021] }] },
            {
              matches: [
                {
                  namespaces: [{ exact: 'ops' }, { prefix: 'test-' }],
                  notNamespaces: [{ exact: 'shop' }],
                  sourceIps: [
                    { address: 'CgAAAA==', length: 8 },
                    { address: 'wKgBBw==', length: 32 },
                  ],
                  notSourceIps: [{ address: 'CgECAw==', length: 32 }],
                },
                { notPrincipals: [PRESENCE] },
              ],
            },
          ],
        },
      ],
    },
  },
  {
    name: 'selector: WORKLOAD_SELECTOR; serviceAccounts in the policy namespace or another; IPv6 and IPv4-mapped addresses',
    yaml: ap(
      'shop',
      'web',
      [
        'selector: {matchLabels: {app: web}}',
        'rules:',
        '- from:',
        '  - source: {serviceAccounts: [frontend, ops/admin], notServiceAccounts: [shop/legacy], ipBlocks: ["2001:db8::/32", "::ffff:10.0.0.1", "fd00::1"]}',
      ].join('\n'),
    ),
    want: {
      name: 'web',
      namespace: 'shop',
      scope: 'WORKLOAD_SELECTOR',
      groups: [
        {
          rules: [
            {
              matches: [
                {
                  serviceAccounts: [
                    { namespace: 'shop', serviceAccount: 'frontend' },
                    { namespace: 'ops', serviceAccount: 'admin' },
                  ],
                  notServiceAccounts: [{ namespace: 'shop', serviceAccount: 'legacy' }],
                  sourceIps: [
                    { address: 'IAENuAAAAAAAAAAAAAAAAA==', length: 32 },
                    { address: 'AAAAAAAAAAAAAP//CgAAAQ==', length: 128 },
                    { address: '/QAAAAAAAAAAAAAAAAAAAQ==', length: 128 },
                  ],
                },
              ],
            },
          ],
        },
      ],
    },
  },
  {
    name: 'when on the five L4 keys: one rule each, values positive and notValues negated',
    yaml: ap(
      'shop',
      'conditions',
      [
        'rules:',
        '- when:',
        '  - {key: source.namespace, values: [ops], notValues: ["dev-*"]}',
        '  - {key: source.principal, values: ["*"]}',
        '  - {key: source.ip, values: [172.16.0.0/12], notValues: [10.1.2.3]}',
        '  - {key: destination.port, values: ["80"], notValues: ["81"]}',
        '  - {key: destination.ip, notValues: ["fd00::1"]}',
      ].join('\n'),
    ),
    want: {
      name: 'conditions',
      namespace: 'shop',
      scope: 'NAMESPACE',
      groups: [
        {
          rules: [
            { matches: [{ namespaces: [{ exact: 'ops' }], notNamespaces: [{ prefix: 'dev-' }] }] },
            { matches: [{ principals: [PRESENCE] }] },
            { matches: [{ sourceIps: [{ address: 'rBAAAA==', length: 12 }], notSourceIps: [{ address: 'CgECAw==', length: 32 }] }] },
            { matches: [{ destinationPorts: [80], notDestinationPorts: [81] }] },
            { matches: [{ notDestinationIps: [{ address: '/QAAAAAAAAAAAAAAAAAAAQ==', length: 128 }] }] },
          ],
        },
      ],
    },
  },
  {
    name: 'an empty rule is a group without rules (matches every connection)',
    yaml: ap('shop', 'allow-all', 'rules:\n- {}\n- to:\n  - operation: {ports: ["8080"]}'),
    want: {
      name: 'allow-all',
      namespace: 'shop',
      scope: 'NAMESPACE',
      groups: [{}, { rules: [{ matches: [{ destinationPorts: [8080] }] }] }],
    },
  },
  {
    name: 'ALLOW without rules: no groups (allows nothing)',
    yaml: ap('shop', 'allow-nothing', '{}'),
    want: { name: 'allow-nothing', namespace: 'shop', scope: 'NAMESPACE' },
  },
  {
    name: 'ALLOW: a rule with HTTP attributes is omitted whole, the L4 rules stay; the attributes are named, sorted',
    yaml: ap(
      'shop',
      'mixed-allow',
      [
        'selector: {matchLabels: {app: web}}',
        'rules:',
        '- from:',
        '  - source: {principals: [cluster.local/ns/shop/sa/a], requestPrincipals: ["issuer/sub"]}',
        '  to:',
        '  - operation: {methods: [GET], paths: [/api], ports: ["80"]}',
        '  when:',
        '  - {key: request.auth.presenter, values: [p]}',
        '- from:',
        '  - source: {namespaces: [ops]}',
        '- from:',
        '  - source: {remoteIpBlocks: [10.0.0.0/8]}',
      ].join('\n'),
    ),
    want: {
      name: 'mixed-allow',
      namespace: 'shop',
      scope: 'WORKLOAD_SELECTOR',
      groups: [{ rules: [{ matches: [{ namespaces: [{ exact: 'ops' }] }] }] }],
    },
    status: httpStatus('methods, paths, remoteIpBlocks, request.auth.presenter, requestPrincipals', ALLOW_OMITTED),
  },
  {
    name: 'ALLOW with only HTTP rules: no groups left (denies everything at ztunnel)',
    yaml: ap(
      'shop',
      'http-only',
      'rules:\n- to:\n  - operation: {hosts: [a.example], notHosts: [b.example], notMethods: [POST], notPaths: [/x]}',
    ),
    want: { name: 'http-only', namespace: 'shop', scope: 'NAMESPACE' },
    status: httpStatus('hosts, notHosts, notMethods, notPaths', ALLOW_OMITTED),
  },
  {
    name: 'DENY with L4 and HTTP fields in one source: enforced on the L4 part (more restrictive)',
    yaml: ap(
      'shop',
      'deny-mixed',
      'action: DENY\nrules:\n- from:\n  - source: {principals: [cluster.local/ns/foo/sa/bar], notRequestPrincipals: ["issuer/sub"]}\n  to:\n  - operation: {methods: [DELETE], ports: ["8080"]}',
    ),
    want: {
      name: 'deny-mixed',
      namespace: 'shop',
      scope: 'NAMESPACE',
      action: 'DENY',
      groups: [
        {
          rules: [{ matches: [{ destinationPorts: [8080] }] }, { matches: [{ principals: [{ exact: 'cluster.local/ns/foo/sa/bar' }] }] }],
        },
      ],
    },
    status: httpStatus('methods, notRequestPrincipals', DENY_MIXED),
  },
  {
    name: 'DENY whose every rule ANDs an HTTP-only part: empty matches, which ztunnel skips (no effect)',
    yaml: ap(
      'shop',
      'deny-http',
      'action: DENY\nrules:\n- from:\n  - source: {principals: [cluster.local/ns/foo/sa/bar]}\n  when:\n  - {key: "request.headers[x-token]", values: [secret]}\n- to:\n  - operation: {methods: [GET]}',
    ),
    want: {
      name: 'deny-http',
      namespace: 'shop',
      scope: 'NAMESPACE',
      action: 'DENY',
      groups: [
        { rules: [{ matches: [{ principals: [{ exact: 'cluster.local/ns/foo/sa/bar' }] }] }, { matches: [{}] }] },
        { rules: [{ matches: [{}] }] },
      ],
    },
    status: httpStatus('methods, request.headers[x-token]', DENY_NO_EFFECT),
  },
  {
    name: 'DENY with a catch-all rule beside an HTTP-only one is still enforced',
    yaml: ap('shop', 'deny-catch-all', 'action: DENY\nrules:\n- {}\n- when:\n  - {key: "request.auth.claims[iss]", values: [x]}'),
    want: { name: 'deny-catch-all', namespace: 'shop', scope: 'NAMESPACE', action: 'DENY', groups: [{}, { rules: [{ matches: [{}] }] }] },
    status: httpStatus('request.auth.claims[iss]', DENY_MIXED),
  },
  {
    name: 'trustDomains are neither sent nor reported (istiod drops them silently)',
    yaml: ap('shop', 'trust-domains', 'rules:\n- from:\n  - source: {trustDomains: [other.td]}'),
    want: { name: 'trust-domains', namespace: 'shop', scope: 'NAMESPACE', groups: [{ rules: [{ matches: [{}] }] }] },
  },
  {
    name: 'AUDIT is not sent; the status says why',
    yaml: ap('shop', 'audit', 'action: AUDIT\nrules:\n- {}'),
    want: undefined,
    status: 'ztunnel does not support the AUDIT action',
  },
  {
    name: 'CUSTOM is not sent; the status says why',
    yaml: ap('shop', 'ext', 'action: CUSTOM\nprovider: {name: authz}\nrules:\n- to:\n  - operation: {paths: [/admin]}'),
    want: undefined,
    status: 'ztunnel does not support the CUSTOM action',
  },
  {
    name: 'targetRefs: the waypoint enforces it, ztunnel gets nothing and no status',
    yaml: ap('shop', 'waypoint', 'targetRefs:\n- {kind: Gateway, group: gateway.networking.k8s.io, name: waypoint}\nrules:\n- {}'),
    want: undefined,
  },
  {
    name: 'targetRef (singular) likewise',
    yaml: ap('shop', 'service-bound', 'targetRef: {kind: Service, group: "", name: reviews}\naction: DENY\nrules:\n- {}'),
    want: undefined,
  },
  {
    name: "dry run, not enabled: not sent, with istiod's status",
    yaml: ap('shop', 'dry', 'rules:\n- {}', 'annotations: {istio.io/dry-run: "true"}'),
    want: undefined,
    status: 'found policy "shop/dry" using dry-run annotation, but support for ambient dry-run authorizationPolicies isn\'t enabled',
  },
  {
    name: 'dry run, enabled: sent with dryRun',
    yaml: ap('shop', 'dry', 'action: DENY\nrules:\n- {}', 'annotations: {istio.io/dry-run: "T"}'),
    options: { dryRunPolicies: true },
    want: { name: 'dry', namespace: 'shop', scope: 'NAMESPACE', action: 'DENY', groups: [{}], dryRun: true },
  },
  {
    name: 'a malformed dry-run value is enforced, with a warning (Go ParseBool knows no "yes")',
    yaml: ap('shop', 'dry-typo', 'rules:\n- {}', 'annotations: {istio.io/dry-run: "yes"}'),
    want: { name: 'dry-typo', namespace: 'shop', scope: 'NAMESPACE', groups: [{}] },
    warning: /AuthorizationPolicy shop\/dry-typo: cannot parse istio\.io\/dry-run: "yes"/,
  },
];

describe('convertAuthorizationPolicy', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const out = convertAuthorizationPolicy(ROOT, configOf('AuthorizationPolicy', c.yaml), c.options);
      assert.deepEqual(out.authorization && toJson(AuthorizationSchema, out.authorization), c.want);
      assert.equal(out.status?.message, c.status);
      if (out.status) assert.equal(out.status.reason, 'UnsupportedValue');
      if (c.warning) assert.match(out.warning ?? '', c.warning);
      else assert.equal(out.warning, undefined);
    });
  }
});
