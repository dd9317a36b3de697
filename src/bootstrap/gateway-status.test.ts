import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectStatus } from '../model/gateway-api/conditions.js';
import { statusBody } from './gateway-status.js';

const NOW = '2026-12-05T03:00:00Z';
const EARLIER = '2026-12-01T00:00:00Z';

describe('Gateway API status bodies', () => {
  it('route parents: ours replace ours, other controllers stay; a condition keeps its transition time while its status holds', () => {
    const st: ObjectStatus = {
      kind: 'HTTPRoute',
      name: 'r',
      namespace: 'ns',
      status: {
        parents: [
          {
            parentRef: { group: '', kind: 'Service', name: 'echo' },
            controllerName: 'istio.io/gateway-controller',
            conditions: [
              { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'Route was valid' },
              { type: 'ResolvedRefs', status: 'False', reason: 'BackendNotFound', message: 'backend(x) not found' },
            ],
          },
        ],
      },
    };
    const live = {
      metadata: { generation: 4 },
      status: {
        parents: [
          {
            parentRef: { group: '', kind: 'Service', name: 'echo' },
            controllerName: 'example.com/other',
            conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'theirs' }],
          },
          {
            parentRef: { kind: 'Service', group: '', name: 'echo' },
            controllerName: 'istio.io/gateway-controller',
            conditions: [
              { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'old', lastTransitionTime: EARLIER, observedGeneration: 3 },
              {
                type: 'ResolvedRefs',
                status: 'True',
                reason: 'ResolvedRefs',
                message: 'ok',
                lastTransitionTime: EARLIER,
                observedGeneration: 3,
              },
            ],
          },
        ],
      },
    };
    const body = statusBody(st, live, NOW) as {
      parents: { controllerName: string; conditions: { type: string; lastTransitionTime: string; observedGeneration: number }[] }[];
    };
    assert.deepEqual(
      body.parents.map((p) => p.controllerName),
      ['example.com/other', 'istio.io/gateway-controller'],
    );
    const ours = body.parents[1]!.conditions;
    assert.deepEqual(
      ours.map((c) => [c.type, c.lastTransitionTime, c.observedGeneration]),
      [
        ['Accepted', EARLIER, 4],
        ['ResolvedRefs', NOW, 4],
      ],
    );
  });

  it('a Gateway: listeners keep their own transition times; addresses as computed', () => {
    const cond = { type: 'Programmed', status: 'True' as const, reason: 'Programmed', message: 'm' };
    const st: ObjectStatus = {
      kind: 'Gateway',
      name: 'gw',
      namespace: 'ns',
      status: {
        addresses: [{ type: 'Hostname', value: 'gw-istio.ns.svc.cluster.local' }],
        conditions: [cond],
        listeners: [{ name: 'http', attachedRoutes: 2, supportedKinds: [], conditions: [cond] }],
      },
    };
    const live = {
      metadata: { generation: 1 },
      status: {
        conditions: [{ ...cond, status: 'False', lastTransitionTime: EARLIER }],
        listeners: [{ name: 'http', conditions: [{ ...cond, lastTransitionTime: EARLIER }] }],
      },
    };
    const body = statusBody(st, live, NOW) as {
      addresses: unknown;
      conditions: { lastTransitionTime: string }[];
      listeners: { attachedRoutes: number; conditions: { lastTransitionTime: string }[] }[];
    };
    assert.deepEqual(body.addresses, [{ type: 'Hostname', value: 'gw-istio.ns.svc.cluster.local' }]);
    assert.equal(body.conditions[0]?.lastTransitionTime, NOW, 'the Gateway condition flipped');
    assert.equal(body.listeners[0]?.conditions[0]?.lastTransitionTime, EARLIER, 'the listener condition held');
    assert.equal(body.listeners[0]?.attachedRoutes, 2);
  });
});
