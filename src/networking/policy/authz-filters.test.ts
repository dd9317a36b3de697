import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { FilterSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { RBAC_Action } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import { RBACSchema as HttpRbacSchema, type RBAC as HttpRbac } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { HttpFilterSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { RBACSchema as NetworkRbacSchema, type RBAC as NetworkRbac } from '../../gen/envoy/extensions/filters/network/rbac/v3/rbac_pb.js';
import { assertValid, formatViolations, validateMessage } from '../../xds/pgv/index.js';
import { envoyValidationRegistry } from '../../model/json-registry.js';
import type { Init } from '../common.js';
import { buildHttpRbacFilters, buildNetworkRbacFilters, type AuthzOptions, type SkippedRule } from './authz-filters.js';
import { authzPolicy } from './test-fixtures.js';
import { readUriTemplateAny, URI_TEMPLATE_TYPE_URL } from './uri-template.js';

const OPTS: AuthzOptions = { trustDomain: 'cluster.local' };
const registry = envoyValidationRegistry();

/* eslint-disable @typescript-eslint/no-explicit-any -- walking proto3 JSON of decoded filters */
type Json = any;

/** Decodes each filter as Envoy would receive it (binary round trip), checks PGV rules, returns the RBAC. */
function httpRbacs(filters: Init<typeof HttpFilterSchema>[]): HttpRbac[] {
  return filters.map((f) => {
    const msg = fromBinary(HttpFilterSchema, toBinary(HttpFilterSchema, create(HttpFilterSchema, f)));
    assert.equal(msg.name, 'envoy.filters.http.rbac');
    // uri_template's proto is not generated yet (see uri-template.ts): the one tolerated gap.
    const violations = validateMessage(HttpFilterSchema, msg, registry).filter(
      (v) => !(v.rule === 'any.unknown_type' && v.message.includes(URI_TEMPLATE_TYPE_URL.slice(0, 60))),
    );
    assert.equal(violations.length, 0, formatViolations(violations));
    assert.equal(msg.configType.case, 'typedConfig');
    const rbac = anyUnpack(msg.configType.value, HttpRbacSchema);
    assert.ok(rbac, 'typed_config is an http RBAC');
    return rbac;
  });
}

function networkRbacs(filters: Init<typeof FilterSchema>[]): NetworkRbac[] {
  return filters.map((f) => {
    const msg = fromBinary(FilterSchema, toBinary(FilterSchema, create(FilterSchema, f)));
    assert.equal(msg.name, 'envoy.filters.network.rbac');
    assertValid(FilterSchema, msg, registry);
    assert.equal(msg.configType.case, 'typedConfig');
    const rbac = anyUnpack(msg.configType.value, NetworkRbacSchema);
    assert.ok(rbac, 'typed_config is a network RBAC');
    return rbac;
  });
}

const httpJson = (r: HttpRbac): Json => toJson(HttpRbacSchema, r);
const networkJson = (r: NetworkRbac): Json => toJson(NetworkRbacSchema, r);
/** The `ids` under `principals[0].andIds` of a policy. */
const principalIds = (json: Json, name: string): Json[] => json.rules.policies[name].principals[0].andIds.ids;
const permissionRules = (json: Json, name: string): Json[] => json.rules.policies[name].permissions[0].andRules.rules;
const authn = (m: Json) => ({ authenticated: { principalName: m } });

describe('HTTP RBAC filters', () => {
  it('emits AUDIT, then DENY, then ALLOW, one filter each, with istiod policy names', () => {
    const allow = authzPolicy('foo', 'allow-a', { rules: [{}] });
    const deny = authzPolicy('foo', 'deny-b', { action: 'DENY', rules: [{}, { to: [{ operation: { methods: ['GET'] } }] }] });
    const audit = authzPolicy('bar', 'audit-c', { action: 'AUDIT', rules: [{}] });
    const rbacs = httpRbacs(buildHttpRbacFilters({ allow: [allow], deny: [deny], audit: [audit] }, OPTS));
    assert.deepEqual(
      rbacs.map((r) => r.rules?.action),
      [RBAC_Action.LOG, RBAC_Action.DENY, RBAC_Action.ALLOW],
    );
    assert.deepEqual(Object.keys(rbacs[0]?.rules?.policies ?? {}), ['ns[bar]-policy[audit-c]-rule[0]']);
    assert.deepEqual(Object.keys(rbacs[1]?.rules?.policies ?? {}), ['ns[foo]-policy[deny-b]-rule[0]', 'ns[foo]-policy[deny-b]-rule[1]']);
    assert.deepEqual(Object.keys(rbacs[2]?.rules?.policies ?? {}), ['ns[foo]-policy[allow-a]-rule[0]']);
    // istiod's shadow prefix quirk: set from the (absent) shadow rules' zero action.
    assert.ok(rbacs.every((r) => r.shadowRulesStatPrefix === 'istio_dry_run_allow_' && r.shadowRules === undefined));
  });

  it('emits nothing without policies', () => {
    assert.deepEqual(buildHttpRbacFilters({}, OPTS), []);
    assert.deepEqual(buildHttpRbacFilters({ allow: [], deny: [] }, OPTS), []);
  });

  it('an empty rule matches everything; an ALLOW policy without rules matches nothing', () => {
    const all = httpJson(httpRbacs(buildHttpRbacFilters({ allow: [authzPolicy('ns1', 'all', { rules: [{}] })] }, OPTS))[0]!);
    assert.deepEqual(all.rules.policies['ns[ns1]-policy[all]-rule[0]'], {
      permissions: [{ andRules: { rules: [{ any: true }] } }],
      principals: [{ andIds: { ids: [{ any: true }] } }],
    });
    const none = httpJson(httpRbacs(buildHttpRbacFilters({ allow: [authzPolicy('ns1', 'nothing', {})] }, OPTS))[0]!);
    assert.equal(none.rules.action, undefined, 'ALLOW is the zero value');
    assert.deepEqual(none.rules.policies['ns[ns1]-policy[nothing]-rule[0]'], {
      permissions: [{ notRule: { any: true } }],
      principals: [{ notId: { any: true } }],
    });
  });

  it('principals become spiffe:// matchers on the peer certificate, with * wildcards', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [
        {
          from: [
            {
              source: {
                principals: ['cluster.local/ns/foo/sa/bar', '*', '*-suffix', 'prefix-*'],
                notPrincipals: ['cluster.local/ns/foo/sa/evil'],
              },
            },
          ],
        },
      ],
    });
    const ids = principalIds(httpJson(httpRbacs(buildHttpRbacFilters({ allow: [p] }, OPTS))[0]!), 'ns[foo]-policy[p]-rule[0]');
    assert.deepEqual(ids, [
      {
        orIds: {
          ids: [
            authn({ exact: 'spiffe://cluster.local/ns/foo/sa/bar' }),
            authn({ safeRegex: { regex: '.+' } }),
            authn({ safeRegex: { regex: 'spiffe://.*-suffix' } }),
            authn({ prefix: 'spiffe://prefix-' }),
          ],
        },
      },
      { notId: { orIds: { ids: [authn({ exact: 'spiffe://cluster.local/ns/foo/sa/evil' })] } } },
    ]);
  });

  it('rewrites cluster.local principals to the mesh trust domain and its aliases', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/foo/sa/bar', 'other.org/ns/foo/sa/x'] } }] }],
    });
    const ids = principalIds(
      httpJson(httpRbacs(buildHttpRbacFilters({ allow: [p] }, { trustDomain: 'td1', trustDomainAliases: ['td0'] }))[0]!),
      'ns[foo]-policy[p]-rule[0]',
    );
    assert.deepEqual(
      ids[0].orIds.ids.map((x: Json) => x.authenticated.principalName.exact),
      ['spiffe://td1/ns/foo/sa/bar', 'spiffe://td0/ns/foo/sa/bar', 'spiffe://other.org/ns/foo/sa/x'],
    );
  });

  it('namespaces, service accounts and trust domains become principal regexes', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [
        {
          from: [
            {
              source: {
                namespaces: ['prod', 'team-*'],
                notNamespaces: ['kube.system'],
                serviceAccounts: ['sa1', 'other/sa2'],
                trustDomains: ['td.io'],
              },
            },
          ],
        },
      ],
    });
    const ids = principalIds(httpJson(httpRbacs(buildHttpRbacFilters({ allow: [p] }, OPTS))[0]!), 'ns[foo]-policy[p]-rule[0]');
    assert.deepEqual(ids, [
      {
        orIds: {
          ids: [
            authn({ safeRegex: { regex: 'spiffe://.+/ns/foo/(.+/|)sa/sa1(/.+)?' } }),
            authn({ safeRegex: { regex: 'spiffe://.+/ns/other/(.+/|)sa/sa2(/.+)?' } }),
          ],
        },
      },
      { orIds: { ids: [authn({ prefix: 'spiffe://td.io/' })] } },
      { orIds: { ids: [authn({ safeRegex: { regex: '.*/ns/prod/.*' } }), authn({ safeRegex: { regex: '.*/ns/team-.*/.*' } })] } },
      { notId: { orIds: { ids: [authn({ safeRegex: { regex: '.*/ns/kube\\.system/.*' } })] } } },
    ]);
  });

  it('ipBlocks match the direct peer, remoteIpBlocks the original client', () => {
    const p = authzPolicy('foo', 'p', {
      action: 'DENY',
      rules: [{ from: [{ source: { ipBlocks: ['10.0.0.0/8'], notRemoteIpBlocks: ['1.2.3.4', '2001:DB8::1'] } }] }],
    });
    const ids = principalIds(httpJson(httpRbacs(buildHttpRbacFilters({ deny: [p] }, OPTS))[0]!), 'ns[foo]-policy[p]-rule[0]');
    assert.deepEqual(ids, [
      {
        notId: {
          orIds: {
            ids: [
              { remoteIp: { addressPrefix: '1.2.3.4', prefixLen: 32 } },
              { remoteIp: { addressPrefix: '2001:db8::1', prefixLen: 128 } },
            ],
          },
        },
      },
      { orIds: { ids: [{ directRemoteIp: { addressPrefix: '10.0.0.0', prefixLen: 8 } }] } },
    ]);
  });

  it('requestPrincipals read iss and sub from the jwt_authn payload metadata', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [{ from: [{ source: { requestPrincipals: ['https://issuer.example/alice', 'https://other.example/*'] } }] }],
    });
    const ids = principalIds(httpJson(httpRbacs(buildHttpRbacFilters({ allow: [p] }, OPTS))[0]!), 'ns[foo]-policy[p]-rule[0]');
    const claim = (key: string, m: Json) => ({
      metadata: { filter: 'envoy.filters.http.jwt_authn', path: [{ key: 'payload' }, { key }], value: { stringMatch: m } },
    });
    assert.deepEqual(ids, [
      {
        orIds: {
          ids: [
            { andIds: { ids: [claim('iss', { exact: 'https://issuer.example' }), claim('sub', { exact: 'alice' })] } },
            { andIds: { ids: [claim('iss', { exact: 'https://other.example' }), claim('sub', { safeRegex: { regex: '.+' } })] } },
          ],
        },
      },
    ]);
  });

  it('operations: hosts case-insensitive on :authority, methods on :method, paths with wildcards and templates, ports', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [
        {
          to: [
            {
              operation: {
                hosts: ['Example.com', '*.example.org'],
                methods: ['GET'],
                notPaths: ['/admin*'],
                paths: ['*', '/api/{*}/items/{**}'],
                ports: ['8080'],
              },
            },
          ],
        },
      ],
    });
    const rbac = httpRbacs(buildHttpRbacFilters({ allow: [p] }, OPTS))[0]!;
    const rules = rbac.rules?.policies['ns[foo]-policy[p]-rule[0]']?.permissions[0]?.rule;
    assert.equal(rules?.case, 'andRules');
    const [hostsRule, methodsRule, pathsRule, notPathsRule, portsRule, ...rest] = rules.value.rules.map((r) => r.rule);
    assert.equal(rest.length, 0);
    const asJson = (r: unknown): Json => {
      const wrapped = create(HttpRbacSchema, {
        rules: { policies: { x: { permissions: [{ rule: r as never }], principals: [{ identifier: { case: 'any', value: true } }] } } },
      });
      return (toJson(HttpRbacSchema, wrapped) as Json).rules.policies.x.permissions[0];
    };
    assert.deepEqual(asJson(hostsRule), {
      orRules: {
        rules: [
          { header: { name: ':authority', stringMatch: { exact: 'Example.com', ignoreCase: true } } },
          { header: { name: ':authority', stringMatch: { suffix: '.example.org', ignoreCase: true } } },
        ],
      },
    });
    assert.deepEqual(asJson(methodsRule), { orRules: { rules: [{ header: { name: ':method', stringMatch: { exact: 'GET' } } }] } });
    assert.deepEqual(asJson(notPathsRule), { notRule: { orRules: { rules: [{ urlPath: { path: { prefix: '/admin' } } }] } } });
    assert.deepEqual(asJson(portsRule), { orRules: { rules: [{ destinationPort: 8080 }] } });
    // paths: `*` is a url_path regex; the template is Envoy's uri_template extension.
    assert.equal(pathsRule?.case, 'orRules');
    const [star, template] = pathsRule.value.rules.map((r) => r.rule);
    assert.deepEqual(asJson(star), { urlPath: { path: { safeRegex: { regex: '.+' } } } });
    assert.equal(template?.case, 'uriTemplate');
    assert.equal(template.value.name, 'uri-template');
    assert.equal(readUriTemplateAny(template.value.typedConfig!), '/api/*/items/**');
  });

  it('conditions land on the principal or permission side, in istiod order', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [
        {
          from: [{ source: { namespaces: ['a'] } }],
          when: [
            { key: 'request.headers[x-team]', values: ['blue'] },
            { key: 'destination.port', notValues: ['9090'] },
            { key: 'request.auth.claims[groups][inner]', values: ['admins', 'ops'] },
            { key: 'request.auth.audiences', values: ['svc'] },
            { key: 'source.ip', values: ['10.1.2.3'] },
            { key: 'connection.sni', values: ['*.local'] },
          ],
        },
      ],
    });
    const json = httpJson(httpRbacs(buildHttpRbacFilters({ allow: [p] }, OPTS))[0]!);
    const name = 'ns[foo]-policy[p]-rule[0]';
    assert.deepEqual(permissionRules(json, name), [
      { notRule: { orRules: { rules: [{ destinationPort: 9090 }] } } },
      { orRules: { rules: [{ requestedServerName: { suffix: '.local' } }] } },
    ]);
    const listOrValue = (keys: string[], value: Json) => ({
      metadata: {
        filter: 'envoy.filters.http.jwt_authn',
        path: keys.map((key) => ({ key })),
        value: { orMatch: { valueMatchers: [{ listMatch: { oneOf: value } }, value] } },
      },
    });
    assert.deepEqual(principalIds(json, name), [
      { orIds: { ids: [authn({ safeRegex: { regex: '.*/ns/a/.*' } })] } },
      { orIds: { ids: [{ header: { name: 'x-team', stringMatch: { exact: 'blue' } } }] } },
      listOrValue(['payload', 'groups', 'inner'], {
        orMatch: { valueMatchers: [{ stringMatch: { exact: 'admins' } }, { stringMatch: { exact: 'ops' } }] },
      }),
      listOrValue(['payload', 'aud'], { stringMatch: { exact: 'svc' } }),
      { orIds: { ids: [{ directRemoteIp: { addressPrefix: '10.1.2.3', prefixLen: 32 } }] } },
    ]);
  });

  it('skips rules istiod cannot generate: unknown attributes always, bad values in ALLOW only', () => {
    const skipped: SkippedRule[] = [];
    const opts = { ...OPTS, onSkippedRule: (s: SkippedRule) => skipped.push(s) };
    const allow = authzPolicy('foo', 'a', {
      rules: [{ when: [{ key: 'request.bogus', values: ['x'] }] }, { from: [{ source: { ipBlocks: ['not-an-ip', '10.0.0.1'] } }] }, {}],
    });
    const deny = authzPolicy('foo', 'd', { action: 'DENY', rules: [{ from: [{ source: { ipBlocks: ['not-an-ip', '10.0.0.1'] } }] }] });
    const [denyRbac, allowRbac] = httpRbacs(buildHttpRbacFilters({ allow: [allow], deny: [deny] }, opts)).map(httpJson);
    assert.deepEqual(Object.keys(allowRbac.rules.policies), ['ns[foo]-policy[a]-rule[2]']);
    assert.deepEqual(
      skipped.map((s) => s.rule),
      ['ns[foo]-policy[a]-rule[0]', 'ns[foo]-policy[a]-rule[1]'],
    );
    assert.match(skipped[0]!.reason, /unknown attribute request\.bogus/);
    assert.match(skipped[1]!.reason, /not-an-ip/);
    // DENY keeps the rule, without the value it cannot express.
    assert.deepEqual(principalIds(denyRbac, 'ns[foo]-policy[d]-rule[0]'), [
      { orIds: { ids: [{ directRemoteIp: { addressPrefix: '10.0.0.1', prefixLen: 32 } }] } },
    ]);
  });

  it('puts dry-run policies in shadow rules with istiod stat prefixes', () => {
    const dry = authzPolicy('foo', 'dry', { action: 'DENY', rules: [{}] }, { 'istio.io/dry-run': 'true' });
    const real = authzPolicy('foo', 'real', { action: 'DENY', rules: [{ from: [{ source: { namespaces: ['x'] } }] }] });
    const [rbac] = httpRbacs(buildHttpRbacFilters({ deny: [dry, real] }, OPTS));
    assert.deepEqual(Object.keys(rbac?.shadowRules?.policies ?? {}), ['ns[foo]-policy[dry]-rule[0]']);
    assert.deepEqual(Object.keys(rbac?.rules?.policies ?? {}), ['ns[foo]-policy[real]-rule[0]']);
    assert.equal(rbac?.shadowRulesStatPrefix, 'istio_dry_run_deny_');
    const onlyDry = httpRbacs(buildHttpRbacFilters({ deny: [dry] }, OPTS))[0];
    assert.equal(onlyDry?.rules, undefined, 'nothing enforced');
  });

  it('rejects a policy passed under the wrong action', () => {
    const deny = authzPolicy('foo', 'd', { action: 'DENY', rules: [{}] });
    assert.throws(
      () => buildHttpRbacFilters({ allow: [deny] }, OPTS),
      /AuthorizationPolicy foo\/d has action DENY but was passed as allow/,
    );
  });
});

describe('network RBAC filters (TCP chains)', () => {
  it('uses envoy.filters.network.rbac with stat prefix tcp.', () => {
    const [rbac] = networkRbacs(
      buildNetworkRbacFilters({ allow: [authzPolicy('foo', 'p', { rules: [{ to: [{ operation: { ports: ['3306'] } }] }] })] }, OPTS),
    );
    assert.equal(rbac?.statPrefix, 'tcp.');
    assert.deepEqual(permissionRules(networkJson(rbac!), 'ns[foo]-policy[p]-rule[0]'), [
      { orRules: { rules: [{ destinationPort: 3306 }] } },
    ]);
  });

  it('drops an ALLOW rule with any HTTP-only field, so it allows nothing on TCP', () => {
    const p = authzPolicy('foo', 'p', {
      rules: [
        { to: [{ operation: { methods: ['GET'], ports: ['80'] } }] },
        { from: [{ source: { requestPrincipals: ['*'] } }] },
        { from: [{ source: { namespaces: ['ok'] } }] },
      ],
    });
    const skipped: SkippedRule[] = [];
    const [rbac] = networkRbacs(buildNetworkRbacFilters({ allow: [p] }, { ...OPTS, onSkippedRule: (s) => skipped.push(s) }));
    assert.deepEqual(Object.keys(rbac?.rules?.policies ?? {}), ['ns[foo]-policy[p]-rule[2]']);
    assert.equal(rbac?.rules?.action, RBAC_Action.ALLOW);
    assert.deepEqual(
      skipped.map((s) => s.rule),
      ['ns[foo]-policy[p]-rule[0]', 'ns[foo]-policy[p]-rule[1]'],
    );
    assert.match(skipped[0]!.reason, /HTTP only/);

    const onlyHttp = networkRbacs(
      buildNetworkRbacFilters({ allow: [authzPolicy('foo', 'h', { rules: [{ to: [{ operation: { paths: ['/x'] } }] }] })] }, OPTS),
    )[0];
    assert.equal(onlyHttp?.rules?.action, RBAC_Action.ALLOW);
    assert.deepEqual(onlyHttp?.rules?.policies, {}, 'an ALLOW filter with no policy denies every connection');
  });

  it('keeps a DENY rule without its HTTP-only fields (an HTTP-only DENY rule denies all TCP)', () => {
    const p = authzPolicy('foo', 'p', {
      action: 'DENY',
      rules: [
        {
          to: [{ operation: { methods: ['GET'], ports: ['8080'] } }],
          from: [{ source: { namespaces: ['ns-2'], requestPrincipals: ['id-1'] } }],
        },
        { to: [{ operation: { methods: ['GET'] } }], when: [{ key: 'request.headers[x]', values: ['y'] }] },
      ],
    });
    const json = networkJson(networkRbacs(buildNetworkRbacFilters({ deny: [p] }, OPTS))[0]!);
    assert.equal(json.rules.action, 'DENY');
    assert.deepEqual(permissionRules(json, 'ns[foo]-policy[p]-rule[0]'), [{ orRules: { rules: [{ destinationPort: 8080 }] } }]);
    assert.deepEqual(principalIds(json, 'ns[foo]-policy[p]-rule[0]'), [
      { orIds: { ids: [authn({ safeRegex: { regex: '.*/ns/ns-2/.*' } })] } },
    ]);
    assert.deepEqual(json.rules.policies['ns[foo]-policy[p]-rule[1]'], {
      permissions: [{ andRules: { rules: [{ any: true }] } }],
      principals: [{ andIds: { ids: [{ any: true }] } }],
    });
  });

  it('the same DENY policy on HTTP keeps every field', () => {
    const p = authzPolicy('foo', 'p', { action: 'DENY', rules: [{ to: [{ operation: { methods: ['GET'], ports: ['8080'] } }] }] });
    const json = httpJson(httpRbacs(buildHttpRbacFilters({ deny: [p] }, OPTS))[0]!);
    assert.equal(permissionRules(json, 'ns[foo]-policy[p]-rule[0]').length, 2);
  });
});
