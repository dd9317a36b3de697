import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Progress } from './progress.js';

const ref = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'istiod', namespace: 'istio-system' };

function run(isTTY: boolean): string {
  let out = '';
  const p = new Progress({ write: (s: string) => (out += s), isTTY });
  p.plan(
    new Map([
      ['Istio core', 1],
      ['Istiod', 2],
    ]),
  );
  p.applied('Istiod');
  p.waiting('Istiod', ref, '0 of 1 replicas available');
  p.waiting('Istiod', ref, '0 of 1 replicas available');
  p.applied('Istio core');
  p.applied('Istiod');
  p.done('Installation complete');
  return out;
}

test('progress without a terminal: plain lines, a repeated wait printed once', () => {
  assert.equal(
    run(false),
    '- Waiting for Deployment istio-system/istiod (0 of 1 replicas available)\n✔ Istio core installed\n✔ Istiod installed\n✔ Installation complete\n',
  );
});

test('progress on a terminal: one status line rewritten in place under the finished lines', () => {
  const out = run(true);
  const CLEAR = '\r\x1b[K';
  assert.equal(
    out,
    [
      `${CLEAR}- Processing resources for Istiod.`,
      `${CLEAR}- Processing resources for Istiod. Waiting for Deployment istio-system/istiod (0 of 1 replicas available)`,
      `${CLEAR}- Processing resources for Istiod. Waiting for Deployment istio-system/istiod (0 of 1 replicas available)`,
      `${CLEAR}✔ Istio core installed\n`,
      `${CLEAR}- Processing resources for Istiod.`,
      `${CLEAR}✔ Istiod installed\n`,
      CLEAR,
      `${CLEAR}✔ Installation complete\n`,
      CLEAR,
    ].join(''),
  );
});
