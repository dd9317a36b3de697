/**
 * The status of waypoint Gateways (class `istio-waypoint`, controller istio.io/mesh-controller),
 * against istiod's golden (pilot/pkg/config/kube/gateway/testdata/waypoint.status.yaml.golden at
 * the reference commit): one HBONE listener on 15008 is accepted with no route kinds, anything else
 * is refused as an unsupported protocol; the address is the Service named after the Gateway (no
 * class suffix), so Programmed waits for it; no internal Gateway config is made from a waypoint.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { PushContext } from '../push-context.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { gatewayApiConfig, gatewayApiStatus } from './gateway-api-model.js';

const gateway = (name: string, listener: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: 'ns' },
  spec: { gatewayClassName: 'istio-waypoint', listeners: [listener] },
});
const VALID = gateway('namespace', { name: 'mesh', port: 15008, protocol: 'HBONE' });
const INVALID = gateway('invalid', { name: 'mesh', port: 1234, protocol: 'HTTP' });

function statusOf(objects: readonly Record<string, unknown>[], domain = 'domain.suffix') {
  const snapshot = snapshotOf(objects);
  const push = new PushContext({ version: 't', mesh: defaultMeshConfig({ domain }), config: snapshot });
  return { statuses: gatewayApiStatus(snapshot, { domain, registry: push.registry, secretsInConfig: true }), snapshot, push };
}

interface Cond {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}
interface GwStatus {
  readonly conditions: readonly Cond[];
  readonly addresses?: readonly { readonly type: string; readonly value: string }[];
  readonly listeners: readonly {
    readonly name: string;
    readonly supportedKinds: readonly unknown[];
    readonly conditions: readonly Cond[];
  }[];
}
const gwOf = (statuses: ReturnType<typeof statusOf>['statuses'], name?: string): GwStatus =>
  statuses.find((s) => s.kind === 'Gateway' && (name === undefined || s.name === name))?.status as unknown as GwStatus;

const conds = (cs: readonly Cond[]): string[] => cs.map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`);

describe('waypoint Gateway status', () => {
  it("matches istiod's golden: HBONE on 15008 accepted without route kinds, another listener refused, no address yet", () => {
    const { statuses } = statusOf([VALID, INVALID]);
    const programmed = (n: string): string =>
      `Programmed=False AddressNotUsable: Failed to assign to any requested addresses: hostname "${n}.ns.svc.domain.suffix" not found`;
    for (const name of ['namespace', 'invalid']) {
      assert.deepEqual(conds(gwOf(statuses, name).conditions), [
        'Accepted=True Accepted: Resource accepted',
        programmed(name),
        'ResolvedRefs=True ResolvedRefs: All references resolved',
      ]);
    }
    const valid = gwOf(statuses, 'namespace').listeners[0]!;
    assert.deepEqual(conds(valid.conditions), [
      'Accepted=True Accepted: No errors found',
      'Conflicted=False NoConflicts: No errors found',
      'Programmed=True Programmed: No errors found',
      'ResolvedRefs=True ResolvedRefs: No errors found',
    ]);
    assert.deepEqual(valid.supportedKinds, []);
    const invalid = gwOf(statuses, 'invalid').listeners[0]!;
    assert.equal(
      conds(invalid.conditions)[0],
      'Accepted=False UnsupportedProtocol: Expected a single listener on port 15008 with protocol "HBONE"',
    );
    assert.deepEqual(invalid.supportedKinds, [
      { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' },
      { group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' },
    ]);
    assert.ok(
      statuses.some((s) => s.kind === 'GatewayClass' && s.name === 'istio-waypoint'),
      'the built-in waypoint class gets a status when a Gateway uses it',
    );
  });

  it("is Programmed with its Service's IP and hostname (named after the Gateway) once that exists, and makes no gateway config", () => {
    const service = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'waypoint-svc', namespace: 'ns' },
      spec: {
        hosts: ['namespace.ns.svc.cluster.local'],
        addresses: ['10.96.10.100'],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [{ name: 'mesh', number: 15008, protocol: 'TCP' }],
        endpoints: [{ address: '10.244.1.20' }],
      },
    };
    const { statuses, snapshot } = statusOf([VALID, service], 'cluster.local');
    const gw = gwOf(statuses, 'namespace');
    assert.equal(gw.conditions.find((c) => c.type === 'Programmed')?.status, 'True', JSON.stringify(gw.conditions));
    assert.deepEqual(gw.addresses, [
      { type: 'IPAddress', value: '10.96.10.100' },
      { type: 'Hostname', value: 'namespace.ns.svc.cluster.local' },
    ]);
    assert.deepEqual(gatewayApiConfig(snapshot, 'cluster.local').gateways, []);
  });

  it('HBONE on a gateway of the istio class is refused as istiod refuses it', () => {
    const { statuses } = statusOf([
      { ...VALID, spec: { gatewayClassName: 'istio', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] } },
    ]);
    const accepted = gwOf(statuses).listeners[0]!.conditions.find((c) => c.type === 'Accepted');
    assert.equal(accepted?.message, 'protocol "HBONE" is only supported for waypoint proxies');
  });
});
