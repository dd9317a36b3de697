/**
 * Connection churn: 500 connect → subscribe → first response → disconnect cycles
 * on an in-process DiscoveryServer over gRPC. Afterwards no connection is registered and a heap
 * snapshot census finds no more Connection, grpc-js server call or node HTTP/2 server stream
 * objects than before. The soak part `churn` runs 10,000 cycles and reports RSS.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { churnScenario } from '../support/faults/churn.js';

describe('faults: connection churn', () => {
  it('500 cycles leave no connection object behind', async () => {
    const r = await churnScenario({ cycles: 500, idleMs: 2000 });
    process.stderr.write(`# churn: ${r.notes}\n`);
    assert.equal(r.failure, undefined, r.failure);
    assert.equal(r.cases, 500);
    assert.equal(r.retained.Connection, 0, 'a Connection survived its stream');
  });
});
