/**
 * Istio's `virtualservice` benchmark input, grown: every host has a VirtualService of many HTTP
 * rules (path and header matches, rewrites, retries, timeouts, subsets), so RDS dominates.
 */
import { dest } from '../../../test/support/mesh-fixtures.js';
import { istioDoc, type Service } from '../mesh.js';
import { httpScenario, size } from './common.js';

const RULES = 20;

function rules(svc: Service, port: number): unknown[] {
  return Array.from({ length: RULES }, (_, r) => ({
    name: `rule-${r}`,
    match: [
      { uri: { prefix: `/api/v${r}/` }, headers: { 'x-tenant': { exact: `tenant-${r}` } } },
      { uri: { regex: `/legacy/${r}/[a-z]+` } },
    ],
    rewrite: { uri: `/v${r}/` },
    route: [dest(svc.host, r % 2 === 0 ? 'v1' : 'v2', undefined, port)],
    timeout: `${1 + (r % 5)}s`,
    retries: { attempts: 1 + (r % 3), perTryTimeout: '1s', retryOn: '5xx,reset' },
  }));
}

export const virtualServiceHeavy = httpScenario({
  name: 'virtualservice-heavy',
  about: `HTTP services whose VirtualServices have ${RULES + 1} rules each (prefix/regex/header matches, rewrites, retries, timeouts)`,
  defaults: size(100, 3, 300, 300),
  quick: size(20, 2, 20, 20, 0, 4),
  port: 80,
  virtualService: (svc, port, before) =>
    istioDoc('VirtualService', svc.name, svc.ns, {
      hosts: [svc.host],
      http: [...before, ...rules(svc, port), { route: [dest(svc.host, 'v1', undefined, port)] }],
    }),
});
