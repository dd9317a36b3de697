import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { JwtAuthenticationSchema } from '../../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import { HttpFilterSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { assertValid } from '../../xds/pgv/index.js';
import { envoyValidationRegistry } from '../../model/json-registry.js';
import { buildJwtAuthnFilter, type JwtAuthnOptions } from './jwt-authn.js';
import { requestAuthn } from './test-fixtures.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- walking proto3 JSON of the decoded filter */
function decoded(ras: Parameters<typeof buildJwtAuthnFilter>[0], opts?: JwtAuthnOptions): any {
  const init = buildJwtAuthnFilter(ras, opts);
  assert.ok(init, 'a filter is built');
  const filter = fromBinary(HttpFilterSchema, toBinary(HttpFilterSchema, create(HttpFilterSchema, init)));
  assertValid(HttpFilterSchema, filter, envoyValidationRegistry());
  assert.equal(filter.name, 'envoy.filters.http.jwt_authn');
  assert.equal(filter.configType.case, 'typedConfig');
  const config = anyUnpack(filter.configType.value, JwtAuthenticationSchema);
  assert.ok(config);
  return toJson(JwtAuthenticationSchema, config);
}

const allowMissingOr = (name: string) => ({ requiresAny: { requirements: [{ providerName: name }, { allowMissing: {} }] } });

describe('jwt_authn filter', () => {
  it('is absent without JWT rules', () => {
    assert.equal(buildJwtAuthnFilter([]), undefined);
    assert.equal(buildJwtAuthnFilter([requestAuthn('foo', 'empty', {})]), undefined);
  });

  it('one rule: a provider with istiod fields, and "valid token or no token" on every path', () => {
    const ra = requestAuthn('foo', 'jwt', {
      jwtRules: [
        {
          issuer: 'https://issuer.example',
          audiences: ['svc-a'],
          jwks: '{"keys":[]}',
          fromHeaders: [{ name: 'x-token', prefix: 'Bearer ' }],
          fromParams: ['token'],
          forwardOriginalToken: true,
          outputPayloadToHeader: 'x-jwt-payload',
          outputClaimToHeaders: [{ header: 'x-sub', claim: 'sub' }],
          spaceDelimitedClaims: ['roles', 'scope'],
        },
      ],
    });
    const json = decoded([ra]);
    assert.deepEqual(json.providers, {
      'origins-0': {
        issuer: 'https://issuer.example',
        audiences: ['svc-a'],
        localJwks: { inlineString: '{"keys":[]}' },
        forward: true,
        fromHeaders: [{ name: 'x-token', valuePrefix: 'Bearer ' }],
        fromParams: ['token'],
        forwardPayloadHeader: 'x-jwt-payload',
        payloadInMetadata: 'payload',
        normalizePayloadInMetadata: { spaceDelimitedClaims: ['permission', 'roles', 'scope'] },
        claimToHeaders: [{ headerName: 'x-sub', claimName: 'sub' }],
      },
    });
    assert.deepEqual(json.rules, [{ match: { prefix: '/' }, requires: allowMissingOr('origins-0') }]);
    assert.equal(json.bypassCorsPreflight, true);
  });

  it('jwksUri: remote JWKS through the outbound cluster of its host and port', () => {
    const ra = requestAuthn('foo', 'jwt', {
      jwtRules: [
        { issuer: 'b-issuer', jwksUri: 'https://keys.example.com/jwks.json' },
        { issuer: 'a-issuer', jwksUri: 'http://keys.internal:8080/k', timeout: '2s' },
      ],
    });
    const json = decoded([ra], { clearRouteCache: true });
    // Sorted by issuer: a-issuer is origins-0.
    assert.equal(json.providers['origins-0'].issuer, 'a-issuer');
    assert.deepEqual(json.providers['origins-0'].remoteJwks, {
      httpUri: { uri: 'http://keys.internal:8080/k', cluster: 'outbound|8080||keys.internal', timeout: '2s' },
      cacheDuration: '300s',
    });
    assert.deepEqual(json.providers['origins-1'].remoteJwks.httpUri, {
      uri: 'https://keys.example.com/jwks.json',
      cluster: 'outbound|443||keys.example.com',
      timeout: '5s',
    });
    assert.equal(json.providers['origins-1'].clearRouteCache, true);
    assert.deepEqual(json.providers['origins-1'].normalizePayloadInMetadata, { spaceDelimitedClaims: ['permission', 'scope'] });
  });

  it('several rules: any one valid token, or every provider valid-or-missing', () => {
    const a = requestAuthn('foo', 'a', { jwtRules: [{ issuer: 'iss-2', jwks: '{}' }] });
    const b = requestAuthn('bar', 'b', {
      jwtRules: [
        { issuer: 'iss-1', jwks: '{}' },
        { issuer: 'iss-3', jwks: '{}' },
      ],
    });
    const json = decoded([a, b]);
    assert.deepEqual(
      Object.keys(json.providers).map((k) => [k, json.providers[k].issuer]),
      [
        ['origins-0', 'iss-1'],
        ['origins-1', 'iss-2'],
        ['origins-2', 'iss-3'],
      ],
    );
    assert.deepEqual(json.rules, [
      {
        match: { prefix: '/' },
        requires: {
          requiresAny: {
            requirements: [
              { providerName: 'origins-0' },
              { providerName: 'origins-1' },
              { providerName: 'origins-2' },
              { requiresAll: { requirements: [allowMissingOr('origins-0'), allowMissingOr('origins-1'), allowMissingOr('origins-2')] } },
            ],
          },
        },
      },
    ]);
  });

  it('names the rule when its key source is unusable', () => {
    const noKeys = requestAuthn('foo', 'bad', { jwtRules: [{ issuer: 'x', jwks: '{}' }, { issuer: 'y' }] });
    assert.throws(() => buildJwtAuthnFilter([noKeys]), /RequestAuthentication foo\/bad jwtRules\[1\]: neither jwks nor jwksUri/);
    const ftp = requestAuthn('foo', 'ftp', { jwtRules: [{ issuer: 'x', jwksUri: 'ftp://keys/x' }] });
    assert.throws(
      () => buildJwtAuthnFilter([ftp]),
      /RequestAuthentication foo\/ftp jwtRules\[0\]\.jwksUri: URI scheme "ftp" is not supported/,
    );
  });
});
