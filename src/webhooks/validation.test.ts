import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createLogger } from '../util/log.js';
import type { AdmissionRequest, AdmissionResponse } from './admission.js';
import { validationHandler } from './validation.js';

const lines: string[] = [];
const validate = validationHandler({ logger: createLogger({ level: 'debug', sink: (l) => lines.push(l) }) });

function unnamed(r: AdmissionRequest): AdmissionRequest {
  delete r.name;
  return r;
}

function req(object: unknown, over: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: 'networking.istio.io', version: 'v1', kind: 'VirtualService' },
    resource: { group: 'networking.istio.io', version: 'v1', resource: 'virtualservices' },
    namespace: 'shop',
    name: 'web',
    operation: 'CREATE',
    object,
    ...over,
  };
}

const vs = (spec: unknown, extra: Record<string, unknown> = {}, apiVersion = 'networking.istio.io/v1'): Record<string, unknown> => ({
  apiVersion,
  kind: 'VirtualService',
  metadata: { name: 'web', namespace: 'shop' },
  spec,
  ...extra,
});

const good = { hosts: ['web'], http: [{ route: [{ destination: { host: 'web' } }] }] };

async function run(r: AdmissionRequest): Promise<AdmissionResponse> {
  return validate(r);
}

const messageOf = (r: AdmissionResponse): string => r.status?.message ?? '';

describe('validation webhook (/validate)', () => {
  it('allows a valid VirtualService in every served version', async () => {
    for (const v of ['v1', 'v1beta1', 'v1alpha3']) {
      assert.deepEqual(await run(req(vs(good, {}, `networking.istio.io/${v}`))), { uid: 'u1', allowed: true }, v);
    }
  });

  it('denies an invalid object with every problem, its field path, in istiod\'s "configuration is invalid" shape', async () => {
    const spec = { hosts: ['web'], http: [{ route: [{ destination: { host: 'web' }, weight: -1 }, { destination: { host: '' } }] }] };
    const r = await run(req(vs(spec)));
    assert.equal(r.allowed, false);
    assert.equal(
      messageOf(r),
      'configuration is invalid: spec.http[0].route[0].weight: weight -1 < 0; spec.http[0].route[1].destination.host: empty domain name not allowed',
    );
    assert.ok(
      lines.some((l) => l.includes('configuration is invalid') && l.includes('VirtualService shop/web')),
      'the denial is logged with the object',
    );
  });

  it('validates other served kinds through the same code as the config sources', async () => {
    const dr = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: { name: 'd', namespace: 'shop' },
      spec: { host: 'web', trafficPolicy: { loadBalancer: { simple: 'NOPE' } } },
    };
    const r = await run(req(dr, { kind: { group: 'networking.istio.io', version: 'v1', kind: 'DestinationRule' } }));
    assert.equal(r.allowed, false);
    assert.match(messageOf(r), /^configuration is invalid: spec\.trafficPolicy\.loadBalancer\.simple: /);
    const ap = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'a', namespace: 'shop' },
      spec: { action: 'ALLOW', rules: [{ from: [{ source: { principals: [''] } }] }] },
    };
    const r2 = await run(req(ap));
    assert.equal(r2.allowed, false, JSON.stringify(r2));
    assert.match(messageOf(r2), /^configuration is invalid: spec\.rules\[0\]\.from\[0\]\.source\.principals/);
  });

  it('a version the kind does not list is checked against the same schema (istiod looks types up by group and kind)', async () => {
    assert.equal((await run(req(vs(good, {}, 'networking.istio.io/v2')))).allowed, true);
    assert.equal(
      (
        await run(
          req(vs({ hosts: ['web'], http: [{ route: [{ destination: { host: 'web' }, weight: -1 }] }] }, {}, 'networking.istio.io/v2')),
        )
      ).allowed,
      false,
    );
  });

  it('DELETE and CONNECT are allowed without looking at the object', async () => {
    assert.deepEqual(await run(req(undefined, { operation: 'DELETE' })), { uid: 'u1', allowed: true });
    assert.deepEqual(await run(req('garbage', { operation: 'CONNECT' })), { uid: 'u1', allowed: true });
  });

  it('an UPDATE and a dry run are validated like a CREATE', async () => {
    const bad = vs({ hosts: ['web'], http: [{ route: [{ destination: { host: 'web' }, weight: -1 }] }] });
    assert.equal((await run(req(bad, { operation: 'UPDATE', oldObject: vs(good) }))).allowed, false);
    assert.equal((await run(req(bad, { dryRun: true }))).allowed, false);
  });

  it('denies types istiod does not know, in its wording', async () => {
    const r = await run(req({ apiVersion: 'networking.istio.io/v1', kind: 'Frobnicator', metadata: { name: 'f' }, spec: {} }));
    assert.deepEqual(r, { uid: 'u1', allowed: false, status: { message: 'unrecognized type networking.istio.io/v1, Kind=Frobnicator' } });
    const secret = await run(req({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: {} }));
    assert.equal(messageOf(secret), 'unrecognized type v1, Kind=Secret', 'core Secrets are not an Istio type here');
    const wrongGroup = await run(req({ apiVersion: 'security.istio.io/v1', kind: 'VirtualService', metadata: { name: 'x' }, spec: good }));
    assert.equal(messageOf(wrongGroup), 'unrecognized type security.istio.io/v1, Kind=VirtualService');
  });

  it('admits an object with validation warnings and returns them, as istiod does', async () => {
    const r = await run(
      req({ apiVersion: 'networking.istio.io/v1alpha3', kind: 'EnvoyFilter', metadata: { name: 'ef', namespace: 'shop' }, spec: {} }),
    );
    assert.equal(r.allowed, true);
    assert.deepEqual(r.warnings, [
      'EnvoyFilter exposes internal implementation details that may change at any time. Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.',
    ]);
    assert.equal((await run(req(vs(good)))).warnings, undefined, 'no warnings, no warnings field');
  });

  it('admits Istio kinds meshpilot does not serve, with a warning that they were not checked', async () => {
    const r = await run(
      req({
        apiVersion: 'extensions.istio.io/v1alpha1',
        kind: 'TrafficExtension',
        metadata: { name: 'te', namespace: 'shop' },
        spec: { anything: 1 },
      }),
    );
    assert.deepEqual(r, {
      uid: 'u1',
      allowed: true,
      warnings: ['meshpilot does not validate TrafficExtension (extensions.istio.io); it was admitted unchecked'],
    });
    assert.equal(
      (await run(req({ apiVersion: 'telemetry.istio.io/v1', kind: 'Telemetry', metadata: { name: 't' }, spec: {} }))).allowed,
      true,
    );
  });

  it("refuses unknown top-level fields (istiod's checkFields)", async () => {
    const r = await run(req(vs(good, { extra: { a: 1 } })));
    assert.deepEqual(r, { uid: 'u1', allowed: false, status: { message: 'unknown field "extra" on VirtualService resource shop/web' } });
    assert.equal((await run(req(vs(good, { status: { validationMessages: [] } })))).allowed, true, 'status is fine');
  });

  it('objects that cannot be decoded are denied naming why', async () => {
    assert.equal(messageOf(await run(req(undefined))), 'cannot decode configuration: request.object is not a JSON object');
    assert.equal(messageOf(await run(req([1, 2]))), 'cannot decode configuration: request.object is not a JSON object');
    assert.equal(
      messageOf(await run(req({ apiVersion: 1, kind: 'VirtualService' }))),
      'cannot decode configuration: apiVersion and kind must be strings',
    );
  });

  it('metadata problems are reported with their path; generateName stands in for a name not generated yet', async () => {
    const badName = await run(req({ ...vs(good), metadata: { name: 'Web_1', namespace: 'shop' } }));
    assert.match(messageOf(badName), /^configuration is invalid: metadata\.name: invalid name "Web_1"/);
    const generated = await run(unnamed(req({ ...vs(good), metadata: { generateName: 'web-', namespace: 'shop' } })));
    assert.equal(generated.allowed, true, messageOf(generated));
    const badPrefix = await run(unnamed(req({ ...vs(good), metadata: { generateName: 'Web_', namespace: 'shop' } })));
    assert.match(messageOf(badPrefix), /metadata\.name: invalid name "Web_xxxxx"/);
  });

  it('counts as istiod: galley_validation_passed / galley_validation_failed{reason}', async () => {
    const registry = new Registry();
    const counted = validationHandler({ logger: createLogger({ level: 'error' }), registry });
    await counted(req(vs(good)));
    await counted(req(vs({ hosts: ['web'], http: [{ route: [{ destination: { host: 'web' }, weight: -1 }] }] })));
    await counted(req({ apiVersion: 'networking.istio.io/v1', kind: 'Nope', metadata: { name: 'n' } }));
    await counted(req(undefined, { operation: 'DELETE' }));
    const text = await registry.metrics();
    const where = 'group="networking.istio.io",version="v1",resource="virtualservices"';
    assert.match(text, new RegExp(`galley_validation_passed\\{${where}\\} 1\\n`));
    for (const reason of ['invalid_resource', 'unknown_type', 'unsupported_operation'])
      assert.match(text, new RegExp(`galley_validation_failed\\{${where},reason="${reason}"\\} 1\\n`), reason);
  });
});
