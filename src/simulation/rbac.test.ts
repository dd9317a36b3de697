import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { RBAC_Action, RBACSchema, type RBAC } from '../gen/envoy/config/rbac/v3/rbac_pb.js';
import { JwtAuthenticationSchema } from '../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import { packAny } from '../networking/common.js';
import type { Connection } from './context.js';
import { formatResult, simulate, type SimRequest, type SimResult } from './index.js';
import { evaluateRbac, uriTemplateMatches } from './rbac.js';
import {
  chain,
  cluster,
  config,
  hcm,
  httpRbac,
  listener,
  networkRbac,
  permission,
  policy,
  prefixRoute,
  principal,
  tcpProxy,
  type HttpFilterInit,
  type PolicyInit,
} from './test-fixtures.js';

const CLIENT = 'spiffe://cluster.local/ns/default/sa/client';
const ADMIN = 'spiffe://cluster.local/ns/ops/sa/admin';

const JWT: HttpFilterInit = {
  name: 'envoy.filters.http.jwt_authn',
  configType: {
    case: 'typedConfig',
    value: packAny(JwtAuthenticationSchema, {
      providers: {
        'origins-0': {
          issuer: 'https://issuer.example',
          payloadInMetadata: 'payload',
          normalizePayloadInMetadata: { spaceDelimitedClaims: ['scope'] },
        },
      },
      rules: [
        {
          match: { pathSpecifier: { case: 'prefix', value: '/' } },
          requirementType: {
            case: 'requires',
            value: {
              requiresType: {
                case: 'requiresAny',
                value: {
                  requirements: [
                    { requiresType: { case: 'providerName', value: 'origins-0' } },
                    { requiresType: { case: 'allowMissing', value: {} } },
                  ],
                },
              },
            },
          },
        },
      ],
    }),
  },
};

/** An inbound sidecar for port 8080: STRICT mTLS, HTTP through jwt_authn + the RBAC filters; TCP on 9000 with network RBAC. */
function inbound(httpFilters: HttpFilterInit[], tcpPolicies?: { action: 'ALLOW' | 'DENY'; policies: Record<string, PolicyInit> }) {
  const c = config({
    listeners: [
      listener('virtualInbound', '0.0.0.0', 15006, {
        inspectors: ['tls', 'http'],
        chains: [
          chain(
            'inbound|8080||',
            [
              hcm({
                vhosts: [{ name: 'inbound|http|8080', domains: ['*'], routes: [prefixRoute('default', '/', 'inbound|8080||')] }],
                httpFilters,
              }),
            ],
            { destinationPort: 8080, transportProtocol: 'tls' },
            'mtls',
          ),
          chain(
            'inbound|9000||',
            [...(tcpPolicies ? [networkRbac(tcpPolicies.action, tcpPolicies.policies)] : []), tcpProxy('inbound|9000||')],
            { destinationPort: 9000, transportProtocol: 'tls' },
            'mtls',
          ),
        ],
      }),
    ],
    clusters: [8080, 9000].map((p) => cluster(`inbound|${p}||`, { type: 'ORIGINAL_DST' })),
  });
  return (req: Partial<SimRequest>): SimResult =>
    simulate(c, {
      address: '10.0.0.5',
      port: 8080,
      protocol: 'http',
      tls: 'mtls',
      callMode: 'inbound',
      callerPrincipal: CLIENT,
      callerIp: '10.0.0.9',
      ...req,
    });
}

describe('HTTP RBAC', () => {
  it('runs DENY before ALLOW: a request both would match is denied', () => {
    const send = inbound([
      httpRbac(
        'DENY',
        { 'ns[default]-policy[deny-delete]-rule[0]': policy([permission.method('DELETE')], [principal.any()]) },
        'envoy.filters.http.rbac',
      ),
      httpRbac(
        'ALLOW',
        { 'ns[default]-policy[allow-client]-rule[0]': policy([permission.any()], [principal.authenticated(CLIENT)]) },
        'envoy.filters.http.rbac',
      ),
    ]);
    const del = send({ method: 'DELETE' });
    assert.equal(del.rbac, 'deny', formatResult(del));
    assert.equal(del.rbacPolicy, 'ns[default]-policy[deny-delete]-rule[0]');
    assert.equal(del.status, 403);
    assert.equal(del.cluster, undefined);
    const get = send({ method: 'GET' });
    assert.equal(get.rbac, 'allow');
    assert.equal(get.rbacPolicy, 'ns[default]-policy[allow-client]-rule[0]');
    assert.equal(get.cluster, 'inbound|8080||');
    assert.equal(get.endpoint, '10.0.0.5:8080');
  });

  it('ALLOW with no matching policy denies, and with no policies at all denies everything', () => {
    const send = inbound([httpRbac('ALLOW', { admin: policy([permission.any()], [principal.authenticated(ADMIN)]) })]);
    assert.equal(send({}).status, 403);
    assert.equal(send({ callerPrincipal: ADMIN }).rbac, 'allow');
    assert.equal(inbound([httpRbac('ALLOW', {})])({ callerPrincipal: ADMIN }).status, 403);
  });

  it('LOG policies never change the outcome', () => {
    const r = inbound([httpRbac('LOG', { audit: policy([permission.any()], [principal.any()]) })])({});
    assert.equal(r.rbac, 'none');
    assert.equal(r.status, undefined);
    assert.equal(r.cluster, 'inbound|8080||');
  });

  it('combines and/or/not rules over method, path and port', () => {
    const send = inbound([
      httpRbac('ALLOW', {
        readonly: policy(
          [
            permission.and([
              permission.or([permission.method('GET'), permission.method('HEAD')]),
              permission.not(permission.pathPrefix('/admin')),
              permission.port(8080),
            ]),
          ],
          [principal.any()],
        ),
      }),
    ]);
    assert.equal(send({ method: 'GET', path: '/books?admin=1' }).rbac, 'allow');
    assert.equal(send({ method: 'HEAD', path: '/books' }).rbac, 'allow');
    assert.equal(send({ method: 'POST', path: '/books' }).rbac, 'deny');
    assert.equal(send({ method: 'GET', path: '/admin/users' }).rbac, 'deny');
  });

  it('authenticates principals only over mTLS this proxy terminated', () => {
    const c = config({
      listeners: [
        listener('virtualInbound', '0.0.0.0', 15006, {
          inspectors: ['tls', 'http'],
          chains: [
            chain(
              'mtls',
              [
                hcm({
                  vhosts: [{ name: 'in', domains: ['*'], routes: [prefixRoute('default', '/', 'app')] }],
                  httpFilters: [httpRbac('ALLOW', { any: policy([permission.any()], [principal.authenticated()]) })],
                }),
              ],
              { transportProtocol: 'tls' },
              'mtls',
            ),
            chain(
              'plain',
              [
                hcm({
                  vhosts: [{ name: 'in', domains: ['*'], routes: [prefixRoute('default', '/', 'app')] }],
                  httpFilters: [httpRbac('ALLOW', { any: policy([permission.any()], [principal.authenticated()]) })],
                }),
              ],
              { transportProtocol: 'raw_buffer' },
            ),
          ],
        }),
      ],
      clusters: [cluster('app', { type: 'ORIGINAL_DST' })],
    });
    const base: SimRequest = { address: '10.0.0.5', port: 8080, protocol: 'http', callMode: 'inbound', callerPrincipal: CLIENT };
    assert.equal(simulate(c, { ...base, tls: 'mtls' }).rbac, 'allow');
    const plain = simulate(c, { ...base, tls: 'none' });
    assert.equal(plain.filterChain, 'plain');
    assert.equal(plain.rbac, 'deny', 'a claimed principal on plaintext is not authenticated');
  });

  it('matches source IPs and negated principals', () => {
    const send = inbound([
      httpRbac('DENY', {
        block: policy([permission.any()], [principal.sourceIp('10.0.0.0', 24), principal.not(principal.authenticated())]),
      }),
    ]);
    assert.equal(send({ callerIp: '10.0.0.77' }).rbac, 'deny');
    assert.equal(send({ callerIp: '10.0.1.77' }).rbac, 'allow');
  });

  it('reads request.auth claims from the jwt_authn payload metadata', () => {
    const send = inbound([JWT, httpRbac('ALLOW', { jwt: policy([permission.any()], [principal.claim('iss', 'https://issuer.example')]) })]);
    assert.equal(send({ jwtClaims: { iss: 'https://issuer.example', sub: 'u1' } }).rbac, 'allow');
    assert.equal(send({}).rbac, 'deny', 'no token: allow_missing passes jwt_authn, RBAC then finds no claims');
    // Without a jwt_authn filter nobody writes the metadata, whatever the caller holds.
    const noJwt = inbound([httpRbac('ALLOW', { jwt: policy([permission.any()], [principal.claim('iss', 'https://issuer.example')]) })]);
    assert.equal(noJwt({ jwtClaims: { iss: 'https://issuer.example' } }).rbac, 'deny');
  });
});

describe('network RBAC', () => {
  it('decides on the connection; HTTP-only rules never match there', () => {
    const send = inbound([], {
      action: 'ALLOW',
      policies: {
        methods: policy([permission.method('GET')], [principal.any()]),
        admin: policy([permission.port(9000)], [principal.authenticated(ADMIN)]),
      },
    });
    const denied = send({ port: 9000, protocol: 'tcp' });
    assert.equal(denied.rbac, 'deny', formatResult(denied));
    assert.equal(denied.cluster, undefined);
    assert.match(denied.error ?? '', /rbac/);
    const allowed = send({ port: 9000, protocol: 'tcp', callerPrincipal: ADMIN });
    assert.equal(allowed.rbac, 'allow');
    assert.equal(allowed.rbacPolicy, 'admin');
    assert.equal(allowed.endpoint, '10.0.0.5:9000');
  });

  it('DENY on the connection', () => {
    const send = inbound([], { action: 'DENY', policies: { ops: policy([permission.any()], [principal.authenticated(ADMIN)]) } });
    assert.equal(send({ port: 9000, protocol: 'tcp', callerPrincipal: ADMIN }).rbac, 'deny');
    assert.equal(send({ port: 9000, protocol: 'tcp' }).rbac, 'allow');
  });
});

describe('RBAC engine', () => {
  const conn: Connection = {
    dstIp: '10.0.0.5',
    dstPort: 8080,
    srcIp: '10.0.0.9',
    srcPort: undefined,
    transportProtocol: 'tls',
    sni: 'outbound_.8080_._.svc',
    alpn: [],
    tls: 'mtls',
    protocol: 'http',
    tlsTerminated: true,
    peerCertificate: true,
    peerPrincipal: CLIENT,
  };
  const rules = (init: object): RBAC => create(RBACSchema, init);
  const warn = (): void => {};

  it('tries policies in name order and reports the first that matched', () => {
    const r = rules({
      action: RBAC_Action.ALLOW,
      policies: { zz: policy([permission.any()], [principal.any()]), aa: policy([permission.any()], [principal.any()]) },
    });
    assert.deepEqual(evaluateRbac(r, { conn, http: undefined, warn }), { allowed: true, enforced: true, policy: 'aa' });
  });

  it('matches destination IP and requested server name', () => {
    const r = rules({
      action: RBAC_Action.DENY,
      policies: {
        sni: {
          permissions: [{ rule: { case: 'requestedServerName', value: { matchPattern: { case: 'suffix', value: '.svc' } } } }],
          principals: [principal.any()],
        },
        ip: {
          permissions: [{ rule: { case: 'destinationIp', value: { addressPrefix: '10.0.0.0', prefixLen: 8 } } }],
          principals: [principal.any()],
        },
      },
    });
    assert.equal(evaluateRbac(r, { conn, http: undefined, warn }).policy, 'ip');
    assert.equal(evaluateRbac(r, { conn: { ...conn, dstIp: '192.168.0.1' }, http: undefined, warn }).policy, 'sni');
    assert.equal(evaluateRbac(r, { conn: { ...conn, dstIp: '192.168.0.1', sni: undefined }, http: undefined, warn }).allowed, true);
  });

  it('does not model CEL conditions: the policy does not match and a warning is given', () => {
    const warnings: string[] = [];
    const r = rules({
      action: RBAC_Action.ALLOW,
      policies: { cel: { ...policy([permission.any()], [principal.any()]), condition: { id: 1n } } },
    });
    assert.equal(evaluateRbac(r, { conn, http: undefined, warn: (m) => warnings.push(m) }).allowed, false);
    assert.match(warnings[0] ?? '', /CEL/);
  });

  it('matches uri templates as istiod emits them', () => {
    assert.ok(uriTemplateMatches('/store/*/items', '/store/1/items'));
    assert.ok(!uriTemplateMatches('/store/*/items', '/store/1/2/items'));
    assert.ok(uriTemplateMatches('/files/**', '/files/a/b/c.txt'));
    assert.ok(uriTemplateMatches('/v/{id}/x.{ext=*}', '/v/7/x.json'));
    assert.ok(!uriTemplateMatches('/a.b/*', '/aXb/c'), 'literal dots are literal');
  });
});
