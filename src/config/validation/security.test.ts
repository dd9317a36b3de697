import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { parseConfigFile } from '../parse.js';
import { validateObject } from './validate-object.js';

/** Real public keys as JWKs (a JWKS is checked as Envoy loads it). */
const rsaJwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' });
const ecJwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
const jwks = (...keys: object[]): string => JSON.stringify({ keys });

type SecurityKind = 'PeerAuthentication' | 'RequestAuthentication' | 'AuthorizationPolicy';

/** Parses YAML as the file source does and validates every document; returns `path: message` lines. */
function validateYaml(text: string): string[] {
  const parsed = parseConfigFile(text, 'security.yaml');
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.errors));
  assert.equal(parsed.value.documents.length, 1);
  const doc = parsed.value.documents[0]!;
  const r = validateObject(doc.object, doc.origin);
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}

function errs(kind: SecurityKind, spec: unknown, namespace = 'ns'): string[] {
  return validateYaml(stringify({ apiVersion: 'security.istio.io/v1', kind, metadata: { name: 'p', namespace }, spec }));
}
const pa = (spec: unknown, ns?: string) => errs('PeerAuthentication', spec, ns);
const ra = (spec: unknown) => errs('RequestAuthentication', spec);
const ap = (spec: unknown) => errs('AuthorizationPolicy', spec);
const rule = (r: unknown) => ap({ rules: [r] });

describe('PeerAuthentication', () => {
  it('accepts mesh, namespace and workload policies written as YAML', () => {
    assert.deepEqual(
      validateYaml(
        'apiVersion: security.istio.io/v1beta1\nkind: PeerAuthentication\nmetadata: {name: default, namespace: istio-system}\nspec:\n  mtls:\n    mode: STRICT\n',
      ),
      [],
    );
    assert.deepEqual(pa({ mtls: { mode: 'PERMISSIVE' } }), []);
    assert.deepEqual(
      pa({ selector: { matchLabels: { app: 'db' } }, mtls: { mode: 'STRICT' }, portLevelMtls: { 5432: { mode: 'DISABLE' }, 8080: {} } }),
      [],
    );
  });

  it('port-level mTLS needs a selector with labels', () => {
    assert.deepEqual(pa({ portLevelMtls: { 80: { mode: 'DISABLE' } } }), [
      'spec.portLevelMtls: mesh/namespace peer authentication cannot have port level mTLS',
    ]);
    assert.deepEqual(pa({ selector: {}, portLevelMtls: { 80: { mode: 'DISABLE' } } }, 'istio-system'), [
      'spec.portLevelMtls: mesh/namespace peer authentication cannot have port level mTLS',
    ]);
  });

  it('port numbers are 1..65535', () => {
    assert.deepEqual(pa({ selector: { matchLabels: { app: 'a' } }, portLevelMtls: { 0: { mode: 'STRICT' }, 443: { mode: 'STRICT' } } }), [
      'spec.portLevelMtls[0]: port 0 must be in range 1..65535',
    ]);
  });

  it('selector labels may not be empty or wildcards; the mode must be known', () => {
    assert.deepEqual(pa({ selector: { matchLabels: { app: '*' } } }), [
      'spec.selector.matchLabels[app]: wildcard is not supported in selector: "app=*"',
    ]);
    assert.deepEqual(pa({ selector: { matchLabels: { '': 'x' } } }), [
      'spec.selector.matchLabels: empty key is not supported in selector: "=x"',
    ]);
    assert.equal(pa({ mtls: { mode: 'ON' } }).length, 1);
  });
});

describe('RequestAuthentication', () => {
  const jwt = (r: Record<string, unknown>) => ra({ jwtRules: [{ issuer: 'https://issuer.example.com', ...r }] });

  it('accepts a typical policy', () => {
    assert.deepEqual(
      ra({
        selector: { matchLabels: { app: 'httpbin' } },
        jwtRules: [
          {
            issuer: 'issuer-foo',
            audiences: ['a', 'b'],
            jwksUri: 'https://example.com/.well-known/jwks.json',
            fromHeaders: [{ name: 'x-jwt', prefix: 'Bearer ' }],
            fromParams: ['token'],
            fromCookies: ['session'],
            outputClaimToHeaders: [{ header: 'x-sub', claim: 'sub' }],
            timeout: '5s',
            forwardOriginalToken: true,
          },
        ],
      }),
      [],
    );
    assert.deepEqual(ra({ jwtRules: [{ jwksUri: 'http://keys.internal:8080/jwks' }] }), [], 'jwksUri alone is enough (istiod)');
    assert.deepEqual(jwt({ jwks: jwks(rsaJwk, ecJwk) }), []);
    assert.deepEqual(jwt({ jwks: JSON.stringify(rsaJwk) }), [], 'a single JWK');
  });

  it('needs an issuer or jwksUri', () => {
    assert.deepEqual(ra({ jwtRules: [{ audiences: ['a'] }] }), ['spec.jwtRules[0].issuer: issuer or jwksUri must be non-empty string']);
  });

  it('jwksUri must be an http(s) URL', () => {
    assert.deepEqual(jwt({ jwksUri: 'ftp://example.com/keys' }), [
      'spec.jwtRules[0].jwksUri: URI scheme "ftp" is not supported (jwksUri must be an http:// or https:// URL)',
    ]);
    assert.deepEqual(jwt({ jwksUri: 'example.com/keys' }), [
      'spec.jwtRules[0].jwksUri: URI scheme "" is not supported (jwksUri must be an http:// or https:// URL)',
    ]);
    assert.deepEqual(jwt({ jwksUri: 'https://example.com:99999/keys' }), [
      'spec.jwtRules[0].jwksUri: invalid jwksUri "https://example.com:99999/keys": not a valid URL',
    ]);
    assert.deepEqual(jwt({ jwksUri: `https://example.com/${'k'.repeat(2048)}` }), [
      'spec.jwtRules[0].jwksUri: jwksUri must be at most 2048 characters',
    ]);
  });

  it('jwks must parse and may not be combined with jwksUri (CRD rule)', () => {
    assert.deepEqual(jwt({ jwks: 'not json' }).length, 1);
    assert.match(jwt({ jwks: 'not json' })[0]!, /^spec\.jwtRules\[0\]\.jwks: jwks parse error: /);
    assert.deepEqual(jwt({ jwks: '{"keys":[{"kty":"RSA","n":"abc"}]}' }), [
      'spec.jwtRules[0].jwks: jwks parse error: RSA key 0 is missing "e"',
    ]);
    assert.deepEqual(jwt({ jwks: '{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}', jwksUri: 'https://example.com/jwks' }), [
      'spec.jwtRules[0]: only one of jwks or jwksUri can be set',
    ]);
  });

  it('jwks keys must be public keys Envoy can load', () => {
    const n = Buffer.from(String(rsaJwk.n), 'base64url');
    n[n.length - 1]! &= 0xfe;
    assert.deepEqual(jwt({ jwks: jwks(ecJwk, { ...rsaJwk, n: n.toString('base64url') }) }), [
      'spec.jwtRules[0].jwks: jwks parse error: RSA key 1 has an even RSA modulus "n" (not a valid RSA public key)',
    ]);
    const [bad] = jwt({ jwks: jwks({ ...ecJwk, x: 'AAAA' }) });
    assert.match(bad ?? '', /^spec\.jwtRules\[0\]\.jwks: jwks parse error: EC key 0 is not a usable public key \(/);
  });

  it('token locations and audiences are non-empty', () => {
    assert.deepEqual(jwt({ audiences: ['ok', ''], fromHeaders: [{ prefix: 'Bearer ' }], fromParams: [''], fromCookies: [''] }), [
      'spec.jwtRules[0].audiences[1]: audience must be non-empty string',
      'spec.jwtRules[0].fromHeaders[0].name: location header name must be non-empty string',
      'spec.jwtRules[0].fromParams[0]: location query must be non-empty string',
      'spec.jwtRules[0].fromCookies[0]: cookie name must be non-empty string',
    ]);
  });

  it('outputClaimToHeaders needs a claim and a valid header name', () => {
    assert.deepEqual(jwt({ outputClaimToHeaders: [{ header: 'x-a' }, { header: 'bad header', claim: 'sub' }] }), [
      'spec.jwtRules[0].outputClaimToHeaders[0]: outputClaimToHeaders header and claim value must be non-empty string',
      'spec.jwtRules[0].outputClaimToHeaders[1].header: header name bad header is not a valid header name',
    ]);
  });

  it('timeout is at least 1ms', () => {
    assert.deepEqual(jwt({ timeout: '0.0001s' }), ['spec.jwtRules[0].timeout: duration must be greater than 1ms']);
  });

  it('selector, targetRef and targetRefs are exclusive; targetRefs name an allowed kind in the same namespace', () => {
    const gw = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'ingress' };
    assert.deepEqual(ra({ targetRefs: [gw] }), []);
    assert.deepEqual(ra({ selector: { matchLabels: { app: 'a' } }, targetRefs: [gw] }), [
      'spec: only one of targetRefs or workloadSelector can be set',
    ]);
    assert.deepEqual(ra({ targetRef: { kind: 'Service', name: 'reviews' }, targetRefs: [gw] }), [
      'spec: only one of targetRefs or workloadSelector can be set',
    ]);
    assert.deepEqual(ra({ targetRefs: [{ group: 'apps', kind: 'Deployment', name: 'x', namespace: 'other' }, { kind: 'Service' }] }), [
      'spec.targetRefs[0].namespace: targetRef namespace must not be set; cross namespace referencing is not supported',
      'spec.targetRefs[0].kind: targetRef must be to one of core/Service, networking.istio.io/ServiceEntry, gateway.networking.k8s.io/Gateway, gateway.networking.k8s.io/GatewayClass but was apps/Deployment',
      'spec.targetRefs[1].name: targetRef name must be set',
    ]);
  });
});

describe('AuthorizationPolicy: action and provider', () => {
  it('accepts the usual policies', () => {
    assert.deepEqual(ap({}), [], 'ALLOW without rules denies everything: allowed');
    assert.deepEqual(ap({ action: 'DENY', rules: [{}] }), []);
    assert.deepEqual(
      ap({ action: 'CUSTOM', provider: { name: 'ext-authz' }, rules: [{ to: [{ operation: { paths: ['/admin/*'] } }] }] }),
      [],
    );
    assert.deepEqual(ap({ action: 'AUDIT', rules: [{ from: [{ source: { namespaces: ['prod'] } }] }] }), []);
  });

  it('CUSTOM needs rules and a provider name; other actions take no provider', () => {
    assert.deepEqual(ap({ action: 'CUSTOM', rules: [{}] }), ['spec.provider.name: `provider.name` must not be empty']);
    assert.deepEqual(ap({ action: 'CUSTOM', provider: {}, rules: [{}] }), ['spec.provider.name: `provider.name` must not be empty']);
    assert.match(ap({ action: 'CUSTOM', provider: { name: 'x' } })[0]!, /^spec\.rules: CUSTOM action without `rules` is meaningless/);
    for (const action of ['ALLOW', 'DENY', 'AUDIT']) {
      assert.deepEqual(ap({ action, provider: { name: 'x' }, rules: [{}] }), [
        `spec.provider: \`provider\` must not be with non CUSTOM action, found ${action}`,
      ]);
    }
  });

  it('DENY needs rules', () => {
    assert.match(ap({ action: 'DENY' })[0]!, /^spec\.rules: DENY action without `rules` is meaningless/);
  });

  it('CUSTOM cannot match identities', () => {
    assert.deepEqual(
      ap({
        action: 'CUSTOM',
        provider: { name: 'x' },
        rules: [
          {
            from: [{ source: { principals: ['a'], ipBlocks: ['10.0.0.0/8'] } }],
            when: [{ key: 'request.auth.claims[iss]', values: ['x'] }],
          },
        ],
      }),
      [
        'spec.rules[0].from[0].source.principals: from.source.principals is currently not supported with CUSTOM action',
        'spec.rules[0].when[0].key: request.auth.claims[iss] is currently not supported with CUSTOM action',
      ],
    );
  });

  it('selector and targetRefs are exclusive', () => {
    assert.deepEqual(ap({ selector: { matchLabels: { app: 'a' } }, targetRef: { kind: 'Service', name: 's' } }), [
      'spec: only one of targetRefs or workloadSelector can be set',
    ]);
    assert.deepEqual(ap({ targetRefs: [{ group: 'networking.istio.io', kind: 'ServiceEntry', name: 'se' }] }), []);
  });
});

describe('AuthorizationPolicy: rules', () => {
  it('from.source and to.operation must be present and not empty', () => {
    assert.deepEqual(rule({ from: [{ source: { namespaces: ['a'] } }, { source: {} }, {}] }), [
      'spec.rules[0].from[1].source: `from.source` must not be empty',
      'spec.rules[0].from[2].source: `from.source` must not be nil',
    ]);
    assert.deepEqual(rule({ to: [{ operation: {} }, {}] }), [
      'spec.rules[0].to[0].operation: `to.operation` must not be empty',
      'spec.rules[0].to[1].operation: `to.operation` must not be nil',
    ]);
  });

  it('no empty strings in lists', () => {
    assert.deepEqual(
      rule({
        from: [{ source: { principals: ['a', ''], notRequestPrincipals: [''] } }],
        to: [{ operation: { methods: [''], hosts: ['h'] } }],
      }),
      [
        'spec.rules[0].from[0].source.principals[1]: empty value not allowed',
        'spec.rules[0].from[0].source.notRequestPrincipals[0]: empty value not allowed',
        'spec.rules[0].to[0].operation.methods[0]: empty value not allowed',
      ],
    );
  });

  it('ipBlocks are IPs or CIDRs', () => {
    assert.deepEqual(rule({ from: [{ source: { ipBlocks: ['10.0.0.1', '10.0.0.0/8', '2001:db8::/32'], remoteIpBlocks: ['::1'] } }] }), []);
    assert.deepEqual(
      rule({
        from: [
          { source: { namespaces: ['a'] } },
          { source: { ipBlocks: ['10.0.0.1', '1.2.3.4/33', 'bogus'], notRemoteIpBlocks: ['1.2.3.256'] } },
        ],
      }),
      [
        'spec.rules[0].from[1].source.ipBlocks[1]: bad CIDR range (1.2.3.4/33): bad bits "33"',
        'spec.rules[0].from[1].source.ipBlocks[2]: bad IP address (bogus)',
        'spec.rules[0].from[1].source.notRemoteIpBlocks[0]: bad IP address (1.2.3.256)',
      ],
    );
  });

  it('serviceAccounts: no wildcards, ns/sa form, not with namespaces or principals', () => {
    assert.deepEqual(rule({ from: [{ source: { serviceAccounts: ['sa', 'ns/sa'] } }] }), []);
    assert.deepEqual(rule({ from: [{ source: { serviceAccounts: ['ns/*', 'a/b/c', '/sa'], namespaces: ['x'] } }] }), [
      'spec.rules[0].from[0].source: cannot set serviceAccounts with namespaces or principals',
      'spec.rules[0].from[0].source.serviceAccounts[0]: wildcard not allowed, found "ns/*"',
      "spec.rules[0].from[0].source.serviceAccounts[1]: expected format 'serviceAccount' or 'namespace/serviceAccount', found \"a/b/c\"",
      "spec.rules[0].from[0].source.serviceAccounts[2]: expected format 'serviceAccount' or 'namespace/serviceAccount', found empty namespace \"/sa\"",
    ]);
    assert.deepEqual(rule({ from: [{ source: { serviceAccounts: Array.from({ length: 17 }, (_, i) => `sa${i}`) } }] }), [
      'spec.rules[0].from[0].source.serviceAccounts: may not have more than 16 values',
    ]);
  });

  it('trustDomains allow one wildcard at an end and no slash', () => {
    assert.deepEqual(rule({ from: [{ source: { trustDomains: ['*.example.com', 'td.local', '*'] } }] }), []);
    assert.deepEqual(rule({ from: [{ source: { trustDomains: ['a*b', '*a*', 'td/x'] } }] }), [
      'spec.rules[0].from[0].source.trustDomains[0]: wildcard is only allowed at the start or end, found in "a*b"',
      'spec.rules[0].from[0].source.trustDomains[1]: at most one wildcard is allowed, found in "*a*"',
      'spec.rules[0].from[0].source.trustDomains[2]: trust domain must not contain \'/\', found "td/x"',
    ]);
  });

  it('ports are numbers 0..65535', () => {
    assert.deepEqual(rule({ to: [{ operation: { ports: ['8080', '0'], notPorts: ['65535'] } }] }), []);
    assert.deepEqual(rule({ to: [{ operation: { ports: ['http', '70000'], notPorts: ['-1'] } }] }), [
      'spec.rules[0].to[0].operation.ports[0]: bad port (http): must be an integer in 0..65535',
      'spec.rules[0].to[0].operation.ports[1]: bad port (70000): must be an integer in 0..65535',
      'spec.rules[0].to[0].operation.notPorts[0]: bad port (-1): must be an integer in 0..65535',
    ]);
  });

  it('path templates: {*} and {**}, {**} last, no other braces, literal segments', () => {
    assert.deepEqual(rule({ to: [{ operation: { paths: ['/foo/{*}/bar', '/foo/{**}', '/api/*', '*/info', '/a/*/b'] } }] }), []);
    assert.deepEqual(
      rule({ to: [{ operation: { paths: ['/foo/{**}/{*}', '/foo/{bar}', '/foo/{*}/b[r'], notPaths: ['/x/{**}/y/{**}'] } }] }),
      [
        'spec.rules[0].to[0].operation.paths[0]: invalid or unsupported path /foo/{**}/{*}: {**} is not the last operator',
        "spec.rules[0].to[0].operation.paths[1]: invalid or unsupported path /foo/{bar}: contains '{' or '}' beyond a supported path template",
        'spec.rules[0].to[0].operation.paths[2]: invalid or unsupported path /foo/{*}/b[r: contains segment "b[r" with invalid string literal',
        'spec.rules[0].to[0].operation.notPaths[0]: invalid or unsupported path /x/{**}/y/{**}: {**} is not the last operator',
      ],
    );
  });
});

describe('AuthorizationPolicy: when conditions', () => {
  const when = (...w: unknown[]) => rule({ when: w });

  it('accepts every supported attribute', () => {
    const ok = [
      ['request.headers[User-Agent]', 'curl/*'],
      ['source.ip', '10.0.0.0/16'],
      ['remote.ip', '1.2.3.4'],
      ['source.namespace', 'prod'],
      ['source.principal', 'cluster.local/ns/a/sa/b'],
      ['source.serviceAccount', 'ns/sa'],
      ['source.trustDomain', '*.local'],
      ['request.auth.principal', 'iss/sub'],
      ['request.auth.audiences', 'aud'],
      ['request.auth.presenter', 'client'],
      ['request.auth.claims[groups]', 'admin'],
      ['destination.ip', '10.1.2.3'],
      ['destination.port', '8080'],
      ['connection.sni', 'a.example.com'],
      ['experimental.envoy.filters.network.mysql_proxy[db.table]', '[update]'],
    ];
    for (const [key, value] of ok) assert.deepEqual(when({ key, values: [value] }), [], key);
    assert.deepEqual(when({ key: 'source.ip', notValues: ['10.0.0.1'] }), []);
  });

  it('rejects unknown, replaced and malformed keys', () => {
    assert.deepEqual(
      when(
        { key: 'source.app', values: ['x'] },
        { key: 'destination.namespace', values: ['x'] },
        { key: 'destination.labels[app]', values: ['x'] },
      ),
      [
        'spec.rules[0].when[0].key: unknown attribute: source.app',
        'spec.rules[0].when[1].key: attribute destination.namespace is replaced by the metadata.namespace',
        'spec.rules[0].when[2].key: attribute destination.labels[app] is replaced by the workload selector',
      ],
    );
    assert.deepEqual(when({ key: 'request.headers', values: ['x'] }, { key: 'request.auth.claims[]', values: ['x'] }), [
      'spec.rules[0].when[0].key: bad key (request.headers): should have format a[b]',
      'spec.rules[0].when[1].key: bad key (request.auth.claims[]): should have format a[b]',
    ]);
    assert.deepEqual(when({ values: ['x'] }), ['spec.rules[0].when[0].key: `key` must not be empty']);
  });

  it('needs values or notValues, each valid for the key', () => {
    assert.deepEqual(when({ key: 'source.ip' }), [
      'spec.rules[0].when[0]: at least one of `values` or `notValues` must be set for key source.ip',
    ]);
    assert.deepEqual(
      when(
        { key: 'source.ip', values: ['nope'], notValues: ['10.0.0.0/40'] },
        { key: 'destination.port', values: ['http'] },
        { key: 'source.namespace', values: [''] },
      ),
      [
        'spec.rules[0].when[0].values[0]: bad IP address (nope)',
        'spec.rules[0].when[0].notValues[0]: bad CIDR range (10.0.0.0/40): bad bits "40"',
        'spec.rules[0].when[1].values[0]: bad port (http): must be an integer in 0..65535',
        'spec.rules[0].when[2].values[0]: empty value not allowed',
      ],
    );
  });
});

describe('every error of an object is reported with the object named', () => {
  it('collects problems across rules and names kind, namespace and name', () => {
    const parsed = parseConfigFile(
      stringify({
        apiVersion: 'security.istio.io/v1',
        kind: 'AuthorizationPolicy',
        metadata: { name: 'bad', namespace: 'apps' },
        spec: { action: 'DENY', rules: [{ from: [{ source: { ipBlocks: ['x'] } }] }, { to: [{ operation: { ports: ['y'] } }] }] },
      }),
      'p.yaml',
    );
    assert.ok(parsed.ok);
    const doc = parsed.value.documents[0]!;
    const r = validateObject(doc.object, doc.origin);
    assert.ok(!r.ok);
    assert.deepEqual(
      r.errors.map((e) => [e.kind, e.namespace, e.name, e.path]),
      [
        ['AuthorizationPolicy', 'apps', 'bad', 'spec.rules[0].from[0].source.ipBlocks[0]'],
        ['AuthorizationPolicy', 'apps', 'bad', 'spec.rules[1].to[0].operation.ports[0]'],
      ],
    );
  });
});
