/** The suite's scenarios, in the order the suite runs them. */
import type { Scenario } from '../scenario.js';
import { authorizationPolicy } from './authorizationpolicy.js';
import { gateways } from './gateways.js';
import { http } from './http.js';
import { serviceEntryWorkloadEntry } from './serviceentry-workloadentry.js';
import { tcp } from './tcp.js';
import { tls } from './tls.js';
import { virtualServiceHeavy } from './virtualservice-heavy.js';

export const SCENARIOS: readonly Scenario[] = [
  http,
  tcp,
  tls,
  virtualServiceHeavy,
  authorizationPolicy,
  serviceEntryWorkloadEntry,
  gateways,
];

export function scenarioByName(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s) throw new Error(`unknown scenario "${name}" (one of: ${SCENARIOS.map((x) => x.name).join(', ')})`);
  return s;
}
