import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatConfigError } from '../config.js';
import { parseConfigFile } from '../parse.js';
import { validateObject, type RawObject } from '../validation/validate-object.js';

const origin = { file: 'cfg/routes.yaml', line: 3 };

function doc(kind: string, spec: unknown, apiVersion = 'gateway.networking.k8s.io/v1'): RawObject {
  return { apiVersion, kind, metadata: { name: 'r', namespace: 'ns' }, spec };
}

/** The formatted errors of `d` (empty when valid). */
function errors(d: RawObject): string[] {
  const r = validateObject(d, origin);
  return r.ok ? [] : r.errors.map(formatConfigError);
}

const service = { group: '', kind: 'Service', name: 'echo' };

describe('Gateway API kinds: validation against the vendored CRD schema', () => {
  it('valid HTTPRoute, GRPCRoute, GatewayClass, Gateway and ReferenceGrant objects are accepted, v1beta1 where the CRD serves it', () => {
    const ok: RawObject[] = [
      doc('HTTPRoute', {
        parentRefs: [service],
        rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/a' } }], backendRefs: [{ name: 'b', port: 80, weight: 3 }] }],
      }),
      doc('HTTPRoute', { parentRefs: [service] }, 'gateway.networking.k8s.io/v1beta1'),
      doc('GRPCRoute', { parentRefs: [service], rules: [{ matches: [{ method: { service: 'a.B', method: 'C' } }] }] }),
      doc('GatewayClass', { controllerName: 'istio.io/gateway-controller' }),
      doc('Gateway', { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] }),
      // addresses items are a oneOf whose branches name only `type`: `value` is not unknown to them.
      doc('Gateway', {
        gatewayClassName: 'istio',
        addresses: [
          { type: 'Hostname', value: 'ingress' },
          { type: 'IPAddress', value: '1.2.3.4' },
        ],
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }],
      }),
      doc(
        'ReferenceGrant',
        { from: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'a' }], to: [{ group: '', kind: 'Service' }] },
        'gateway.networking.k8s.io/v1beta1',
      ),
    ];
    for (const d of ok) assert.deepEqual(errors(d), [], `${String(d.kind)} ${String(d.apiVersion)}`);
  });

  it('Gateway API `Gateway` is stored as KubernetesGateway; Istio `Gateway` stays Istio', () => {
    const k8s = validateObject(
      doc('Gateway', { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] }),
      origin,
    );
    assert.ok(k8s.ok);
    assert.equal(k8s.value.meta.kind, 'KubernetesGateway');
    const istio = validateObject(
      doc('Gateway', { servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] }, 'networking.istio.io/v1'),
      origin,
    );
    assert.ok(istio.ok, istio.ok ? '' : JSON.stringify(istio.errors));
    assert.equal(istio.value.meta.kind, 'Gateway');
  });

  it('types, enums, patterns, bounds, required fields, maxItems and unknown fields are reported with file, kind, name and field', () => {
    const got = errors(
      doc('HTTPRoute', {
        parentRefs: [{ ...service, port: 70000 }],
        hostnames: ['UPPER.example.com'],
        rules: [
          {
            matches: [{ path: { type: 'Prefix', value: '/' }, headers: [{ value: 'x' }] }],
            backendRefs: [{ name: 'b', port: 80, weight: 'ten' }],
            filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'a', value: '1' }] }, colour: 'red' }],
          },
        ],
      }),
    );
    assert.deepEqual(got, [
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.parentRefs[0].port: must be at most 65535, got 70000',
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.hostnames[0]: "UPPER.example.com" does not match the pattern ^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$',
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.rules[0].matches[0].path.type: unsupported value "Prefix": must be one of "Exact", "PathPrefix", "RegularExpression"',
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.rules[0].matches[0].headers[0].name: name is required',
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.rules[0].backendRefs[0].weight: expected an integer, got string "ten"',
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.rules[0].filters[0].colour: unknown field "colour" (known: cors, extensionRef, requestHeaderModifier, requestMirror, requestRedirect, responseHeaderModifier, type, urlRewrite)',
    ]);
  });

  it('maxItems and list-map uniqueness', () => {
    const refs = Array.from({ length: 33 }, (_, i) => ({ ...service, name: `s${i}` }));
    assert.deepEqual(errors(doc('HTTPRoute', { parentRefs: refs })), [
      'cfg/routes.yaml:3 HTTPRoute ns/r spec.parentRefs: must have at most 32 items, got 33',
    ]);
    const dup = errors(
      doc('GRPCRoute', {
        parentRefs: [service],
        rules: [
          {
            matches: [
              {
                headers: [
                  { name: 'a', value: '1' },
                  { name: 'a', value: '2' },
                ],
              },
            ],
          },
        ],
      }),
    );
    assert.deepEqual(dup, [
      'cfg/routes.yaml:3 GRPCRoute ns/r spec.rules[0].matches[0].headers[1]: duplicate entry (same name as spec.rules[0].matches[0].headers[0])',
    ]);
  });

  it('a version the CRD does not serve is rejected naming the served ones', () => {
    assert.deepEqual(errors(doc('GRPCRoute', {}, 'gateway.networking.k8s.io/v1beta1')), [
      'cfg/routes.yaml:3 GRPCRoute ns/r apiVersion: apiVersion gateway.networking.k8s.io/v1beta1 is not supported for GRPCRoute (supported: gateway.networking.k8s.io/v1)',
    ]);
  });

  it('the file parser keeps Gateway API documents and Istio documents of the same kind name apart', () => {
    const text = [
      'apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec: {gatewayClassName: istio, listeners: [{name: a, port: 80, protocol: HTTP}]}',
      'apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec: {servers: [{port: {number: 80, name: http, protocol: HTTP}, hosts: ["*"]}]}',
      'apiVersion: gateway.networking.k8s.io/v1alpha2\nkind: UDPRoute\nmetadata: {name: t}\nspec: {}',
    ].join('\n---\n');
    const r = parseConfigFile(text, 'mixed.yaml');
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.documents.map((d) => validateObject(d.object, d.origin)).map((v) => (v.ok ? v.value.meta.kind : v.errors)),
      ['KubernetesGateway', 'Gateway'],
    );
    assert.equal(r.value.skipped, 1, 'UDPRoute is not served');
  });
});
