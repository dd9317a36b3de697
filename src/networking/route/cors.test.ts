import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { anyUnpack, DurationSchema } from '@bufbuild/protobuf/wkt';
import { CorsPolicySchema as EnvoyCorsSchema } from '../../gen/envoy/extensions/filters/http/cors/v3/cors_pb.js';
import { CorsPolicy_UnmatchedPreflights, CorsPolicySchema } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { assertValid } from '../../xds/pgv/index.js';
import { envoyValidationRegistry } from '../../model/json-registry.js';
import { corsPerRouteConfig } from './cors.js';

const registry = envoyValidationRegistry();

test('a corsPolicy becomes the CORS filter per-route config istiod writes', () => {
  const any = corsPerRouteConfig(
    create(CorsPolicySchema, {
      allowOrigin: ['https://legacy.example.com'],
      allowOrigins: [{ matchType: { case: 'prefix', value: 'https://app.' } }],
      allowMethods: ['GET', 'POST'],
      allowHeaders: ['x-a', 'x-b'],
      exposeHeaders: ['x-c'],
      maxAge: create(DurationSchema, { seconds: 86400n }),
      allowCredentials: false,
      unmatchedPreflights: CorsPolicy_UnmatchedPreflights.IGNORE,
    }),
  );
  assert.ok(any);
  const p = anyUnpack(any, EnvoyCorsSchema)!;
  assertValid(EnvoyCorsSchema, p, registry);
  assert.deepEqual(
    p.allowOriginStringMatch.map((m) => [m.matchPattern.case, m.matchPattern.value]),
    [
      ['exact', 'https://legacy.example.com'],
      ['prefix', 'https://app.'],
    ],
  );
  assert.equal(p.allowMethods, 'GET,POST');
  assert.equal(p.allowHeaders, 'x-a,x-b');
  assert.equal(p.exposeHeaders, 'x-c');
  assert.equal(p.maxAge, '86400');
  assert.equal(p.allowCredentials, false);
  assert.equal(p.forwardNotMatchingPreflights, false);
  const f = p.filterEnabled?.defaultValue;
  assert.ok(f);
  assert.equal(f.numerator / [100, 10_000, 1_000_000][f.denominator]!, 1, 'enabled for every request');
});

test('no corsPolicy, no per-route config; unset credentials stay unset, unmatched preflights are forwarded', () => {
  assert.equal(corsPerRouteConfig(undefined), undefined);
  const p = anyUnpack(
    corsPerRouteConfig(create(CorsPolicySchema, { allowOrigins: [{ matchType: { case: 'exact', value: 'x' } }] }))!,
    EnvoyCorsSchema,
  )!;
  assert.equal(p.allowCredentials, undefined);
  assert.equal(p.forwardNotMatchingPreflights, true);
  assert.equal(p.maxAge, '');
});
