import assert from 'node:assert/strict';
import { it } from 'node:test';
import { INGRESS_USE_WAYPOINT_LABEL, ingressUseWaypoint } from './waypoints.js';

it("ingress-use-waypoint: the service's label, else its namespace's, read as Go's ParseBool", () => {
  const label = (v: string): Record<string, string> => ({ [INGRESS_USE_WAYPOINT_LABEL]: v });
  for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True']) assert.equal(ingressUseWaypoint(label(v), {}), true, v);
  for (const v of ['yes', 'on', 'tRUE', '', '0', 'false']) assert.equal(ingressUseWaypoint(label(v), {}), false, v);
  assert.equal(ingressUseWaypoint({}, label('true')), true, 'from the namespace');
  assert.equal(ingressUseWaypoint(label('false'), label('true')), false, "the service's label wins");
  assert.equal(ingressUseWaypoint({}, {}), false);
});
