import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObject } from './validate-object.js';

/** `path: message` of every error, or [] when valid. */
function errs(spec: unknown, metadata: unknown = { name: 'vs', namespace: 'ns' }): string[] {
  const r = validateObject({ apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata, spec }, { file: 'vs.yaml', line: 1 });
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}
const route = (host = 'reviews', weight?: number) => ({ destination: { host }, ...(weight !== undefined ? { weight } : {}) });

test('a typical VirtualService is valid', () => {
  assert.deepEqual(
    errs({
      hosts: ['reviews', 'reviews.prod.svc.cluster.local', '*.example.com'],
      gateways: ['mesh', 'istio-system/ingress'],
      http: [
        {
          name: 'v2',
          match: [{ uri: { prefix: '/api' }, headers: { 'x-user': { regex: '^(jason|json)$' } }, queryParams: { v: { exact: '2' } } }],
          route: [route('reviews', 75), { destination: { host: 'reviews', subset: 'v2', port: { number: 9080 } }, weight: 25 }],
          timeout: '10s',
          retries: { attempts: 3, perTryTimeout: '2s', retryOn: '5xx,connect-failure,503' },
          fault: { abort: { httpStatus: 503, percentage: { value: 10 } }, delay: { fixedDelay: '5s', percentage: { value: 0.5 } } },
          mirror: { host: 'shadow' },
          mirrorPercentage: { value: 50 },
        },
        { redirect: { uri: '/v1', redirectCode: 301 } },
        { directResponse: { status: 404, body: { string: 'nope' } } },
      ],
      tcp: [{ match: [{ port: 3306 }], route: [route('db')] }],
    }),
    [],
  );
});

test('a single destination needs no weight', () => {
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('r')] }] }), []);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('r', 0)] }] }), []);
});

test('weights are relative: 60+30 is accepted (istiod since 1.15), all-zero with several destinations is not', () => {
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('a', 60), route('b', 30)] }] }), []);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('a'), route('b')] }] }), [
    'spec.http[0].route: total destination weight = 0',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], tcp: [{ route: [route('a', 0), route('b', 0)] }] }), [
    'spec.tcp[0].route: total destination weight = 0',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('a', -1), route('b', 50)] }] }), [
    'spec.http[0].route[0].weight: weight -1 < 0',
  ]);
});

test('hosts: delegate VirtualServices have none; every host must be a valid name', () => {
  // No hosts = a delegate: allowed, but then no gateways, tls or tcp.
  assert.deepEqual(errs({ http: [{ route: [route()] }] }), []);
  assert.deepEqual(errs({ gateways: ['gw'], tcp: [{ route: [route()] }] }), [
    'spec.gateways: delegate virtual service must have no gateways specified',
    'spec.tcp: delegate virtual service must have no tcp route specified',
  ]);
  assert.deepEqual(errs({ hosts: ['bad_host!'], http: [{ route: [route()] }] }), [
    'spec.hosts[0]: domain name "bad_host!" invalid (label "bad_host!" invalid)',
  ]);
  assert.deepEqual(errs({ hosts: ['*'], http: [{ route: [route()] }] }), [
    'spec.hosts[0]: wildcard host * is not allowed for virtual services bound to the mesh gateway',
  ]);
  assert.deepEqual(errs({ hosts: ['*'], gateways: ['gw'], http: [{ route: [route()] }] }), []);
  assert.deepEqual(errs({ hosts: ['a.foo.com', '*.foo.com'], http: [{ route: [route()] }] }), [
    'spec.hosts[1]: duplicate hosts in virtual service: a.foo.com & *.foo.com',
  ]);
  assert.deepEqual(errs({ hosts: ['r'] }), ['spec: http, tcp or tls must be provided in virtual service']);
});

test('gateway names', () => {
  assert.deepEqual(errs({ hosts: ['r'], gateways: ['ns/', 'Bad_NS/gw'], http: [{ route: [route()] }] }), [
    'spec.gateways[0]: config namespace and gateway name cannot be empty',
    'spec.gateways[1]: invalid value for namespace: "Bad_NS"',
  ]);
});

test('http route needs route, redirect or directResponse, and not two of them', () => {
  assert.deepEqual(errs({ hosts: ['r'], http: [{ name: 'x' }] }), ['spec.http[0]: HTTP route, redirect or direct_response is required']);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route()], redirect: { uri: '/x' } }] }), [
    'spec.http[0]: HTTP route cannot contain both route and redirect',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route()], directResponse: { status: 200 } }] }), [
    'spec.http[0]: HTTP route cannot contain both route and direct_response',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ redirect: {} }] }), [
    'spec.http[0].redirect: redirect must specify URI, authority, scheme, or port',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ delegate: { name: 'child', namespace: 'ns' } }] }), []);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ delegate: { name: 'child' }, route: [route()] }] }), [
    'spec.http[0].route: root HTTP route  must not specify route',
  ]);
});

test('destinations need a valid host', () => {
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [{ weight: 100 }] }] }), [
    'spec.http[0].route[0].destination: destination is required',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('*')] }] }), [
    'spec.http[0].route[0].destination.host: invalid destination host *',
  ]);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ route: [route('')] }] }), [
    'spec.http[0].route[0].destination.host: empty domain name not allowed',
  ]);
});

test('port numbers are 1..65535', () => {
  assert.deepEqual(
    errs({ hosts: ['r'], http: [{ match: [{ port: 70000 }], route: [{ destination: { host: 'r', port: { number: 0 } } }] }] }),
    [
      'spec.http[0].match[0].port: port number 70000 must be in the range 1..65535',
      'spec.http[0].route[0].destination.port.number: port number 0 must be in the range 1..65535',
    ],
  );
});

test('every regex must compile as RE2', () => {
  const invalid = (re: string, where = 'uri') =>
    errs({
      hosts: ['r'],
      http: [{ match: [where === 'uri' ? { uri: { regex: re } } : { headers: { 'x-a': { regex: re } } }], route: [route()] }],
    });
  assert.deepEqual(invalid('^/api/v[0-9]+$'), []);
  // Named groups are RE2 (and re2-wasm, which grpc-js-xds uses); lookarounds and backreferences are not.
  assert.deepEqual(invalid('(?P<v>x)'), []);
  assert.deepEqual(invalid('(?<name>x)'), []);
  for (const re of ['(?<=a)b', '([a-z', '(a)\\1', 'a**']) {
    const e = invalid(re);
    assert.equal(e.length, 1, re);
    assert.match(e[0] ?? '', /^spec\.http\[0\]\.match\[0\]\.uri\.regex: error parsing regexp: .*; Istio uses RE2/);
  }
  assert.match(invalid('(?=x)', 'header')[0] ?? '', /^spec\.http\[0\]\.match\[0\]\.headers\[x-a\]\.regex: error parsing regexp/);
  assert.deepEqual(invalid(''), ['spec.http[0].match[0].uri.regex: regex string match should not be empty']);
  assert.match(invalid('a'.repeat(1025))[0] ?? '', /regex is too large/);
  const authority = errs({
    hosts: ['r'],
    http: [
      {
        match: [{ authority: { regex: '[' }, method: { regex: '(' }, scheme: { regex: ')' }, queryParams: { q: { regex: '*' } } }],
        route: [route()],
      },
    ],
  });
  assert.deepEqual(
    authority.map((e) => e.split(':')[0]),
    [
      'spec.http[0].match[0].scheme.regex',
      'spec.http[0].match[0].method.regex',
      'spec.http[0].match[0].authority.regex',
      'spec.http[0].match[0].queryParams[q].regex',
    ],
  );
  // Regex rewrites and CORS origins are regexes too.
  assert.match(
    errs({ hosts: ['r'], http: [{ route: [route()], rewrite: { uriRegexRewrite: { match: '(', rewrite: '/' } } }] })[0] ?? '',
    /^spec\.http\[0\]\.rewrite\.uriRegexRewrite\.match: error parsing regexp/,
  );
  assert.match(
    errs({ hosts: ['r'], http: [{ route: [route()], corsPolicy: { allowOrigins: [{ regex: '(' }] } }] })[0] ?? '',
    /^spec\.http\[0\]\.corsPolicy\.allowOrigins\[0\]\.regex: error parsing/,
  );
});

test('an empty prefix is allowed for uri only', () => {
  assert.deepEqual(errs({ hosts: ['r'], http: [{ match: [{ uri: { prefix: '' } }], route: [route()] }] }), []);
  assert.deepEqual(errs({ hosts: ['r'], http: [{ match: [{ headers: { 'x-a': { prefix: '' } } }], route: [route()] }] }), [
    'spec.http[0].match[0].headers[x-a].prefix: prefix string match should not be empty',
  ]);
});

test('fault injection', () => {
  const fault = (f: unknown) => errs({ hosts: ['r'], http: [{ route: [route()], fault: f }] });
  assert.deepEqual(fault({}), ['spec.http[0].fault: HTTP fault injection must have an abort and/or a delay']);
  assert.deepEqual(fault({ abort: { percentage: { value: 10 } } }), ['spec.http[0].fault.abort: abort needs httpStatus or grpcStatus']);
  assert.deepEqual(fault({ abort: { httpStatus: 99 } }), ['spec.http[0].fault.abort.httpStatus: HTTP status 99 is not in range 200-599']);
  assert.deepEqual(fault({ abort: { httpStatus: 600 } }), ['spec.http[0].fault.abort.httpStatus: HTTP status 600 is not in range 200-599']);
  assert.deepEqual(fault({ abort: { grpcStatus: 'UNAVAILABLE' } }), []);
  assert.match(
    fault({ abort: { grpcStatus: 'NOPE' } })[0] ?? '',
    /^spec\.http\[0\]\.fault\.abort\.grpcStatus: gRPC status "NOPE" is not supported/,
  );
  assert.deepEqual(fault({ abort: { httpStatus: 503, percentage: { value: 101 } } }), [
    'spec.http[0].fault.abort.percentage: percentage 101 is neither 0.0, nor in range [0.0001, 100.0]',
  ]);
  assert.deepEqual(fault({ delay: { percentage: { value: 5 } } }), ['spec.http[0].fault.delay: delay needs fixedDelay']);
  assert.deepEqual(fault({ delay: { fixedDelay: '0s' } }), ['spec.http[0].fault.delay.fixedDelay: duration must be greater than 1ms']);
  assert.deepEqual(fault({ delay: { fixedDelay: '1s', percent: 150 } }), [
    'spec.http[0].fault.delay.percent: percentage 150 is not in range 0..100',
  ]);
});

test('retries and timeouts', () => {
  const retries = (r: unknown, extra: object = {}) => errs({ hosts: ['r'], http: [{ route: [route()], retries: r, ...extra }] });
  assert.deepEqual(retries({ attempts: 0 }), []);
  assert.deepEqual(retries({ attempts: -1 }), ['spec.http[0].retries.attempts: attempts cannot be negative']);
  assert.deepEqual(retries({ attempts: 0, retryOn: '5xx' }), [
    'spec.http[0].retries.attempts: http retry policy configured when attempts are set to 0 (disabled)',
  ]);
  assert.deepEqual(retries({ attempts: 2, perTryTimeout: '0.0005s' }), [
    'spec.http[0].retries.perTryTimeout: duration must be greater than 1ms',
  ]);
  assert.deepEqual(retries({ attempts: 2, retryOn: 'gateway-error,bogus' }), [
    'spec.http[0].retries.retryOn: "bogus" is not a valid retryOn policy',
  ]);
  assert.deepEqual(retries(undefined, { timeout: '0.0001s' }), ['spec.http[0].timeout: duration must be greater than 1ms']);
  assert.deepEqual(retries(undefined, { timeout: '1.0005s' }), ['spec.http[0].timeout: only durations to ms precision are supported']);
});

test('mirrors and rewrites', () => {
  const http = (h: object) => errs({ hosts: ['r'], http: [{ route: [route()], ...h }] });
  assert.deepEqual(http({ mirror: { host: 'm' }, mirrorPercentage: { value: 150 } }), [
    'spec.http[0].mirrorPercentage: mirror_percentage must have a max value of 100 (it has 150)',
  ]);
  assert.deepEqual(http({ mirrors: [{ destination: { host: 'm' }, percentage: { value: -1 } }] }), [
    'spec.http[0].mirrors[0].percentage: mirror percentage must be in range 0..100 (it has -1)',
  ]);
  assert.deepEqual(http({ mirror: { host: 'm' }, mirrors: [{ destination: { host: 'n' } }] }), [
    'spec.http[0]: HTTP route cannot contain both mirror and mirrors',
  ]);
  assert.deepEqual(http({ rewrite: { uri: '/a', uriRegexRewrite: { match: 'a', rewrite: 'b' } } }), [
    'spec.http[0].rewrite: rewrite may only contain one of URI or UriRegexRewrite',
  ]);
  assert.deepEqual(http({ rewrite: { authority: 'a' }, headers: { request: { set: { host: 'b' } } } }), [
    'spec.http[0].headers.request.set[host]: authority header cannot be set multiple times: have "a", attempting to set "b"',
  ]);
  assert.deepEqual(http({ headers: { response: { set: { ':status': '200' } } } }), [
    'spec.http[0].headers.response.set[:status]: invalid header ":status": header cannot have ":" prefix',
  ]);
});

test('tls routes need sni hosts that are subsets of the hosts', () => {
  assert.deepEqual(
    errs({ hosts: ['*.example.com'], tls: [{ match: [{ sniHosts: ['a.example.com'] }], route: [route('a.example.com')] }] }),
    [],
  );
  assert.deepEqual(errs({ hosts: ['a.example.com'], tls: [{ match: [{ sniHosts: ['b.example.com'], port: 0 }], route: [] }] }), [
    'spec.tls[0].match[0].sniHosts[0]: SNI host "b.example.com" is not a compatible subset of any of the virtual service hosts: [a.example.com]',
    'spec.tls[0].route: TLS route is required',
  ]);
  assert.deepEqual(errs({ hosts: ['a'], tls: [{ route: [route()] }] }), [
    'spec.tls[0].match: TLS route must have at least one match condition',
  ]);
});

test('tcp routes', () => {
  assert.deepEqual(errs({ hosts: ['a'], tcp: [{ match: [{ destinationSubnets: ['10.0.0.0/33'], port: 99999 }] }] }), [
    'spec.tcp[0].match[0].destinationSubnets[0]: 10.0.0.0/33 is not a valid CIDR block',
    'spec.tcp[0].match[0].port: port number 99999 must be in the range 1..65535',
    'spec.tcp[0].route: TCP route is required',
  ]);
});

test('all errors of an object are returned, with schema errors first', () => {
  const e = errs({ hosts: ['r'], htp: [], http: [{ route: [route('a', 0), route('b', 0)], timeout: 'soon' }] });
  assert.deepEqual(e, [
    'spec.htp: unknown field "htp"',
    'spec.http[0].timeout: invalid duration "soon" (use e.g. "5s", "250ms" or "1m30s")',
  ]);
  // Unknown fields alone still let the semantic checks run.
  assert.deepEqual(errs({ hosts: ['r'], rout: [], http: [{ route: [route('a', 0), route('b', 0)] }] }), [
    'spec.rout: unknown field "rout"',
    'spec.http[0].route: total destination weight = 0',
  ]);
});
