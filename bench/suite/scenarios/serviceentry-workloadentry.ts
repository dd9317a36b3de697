/**
 * Istio's `serviceentry-workloadentry` benchmark input: 100 ServiceEntries with four ports each
 * (http, tcp, https, auto-detected) selecting 1000 WorkloadEntries (10 per service by default;
 * `--instances` per service). Only the target service has a VirtualService.
 */
import { httpScenario, size } from './common.js';

const HTTP = 80;

export const serviceEntryWorkloadEntry = httpScenario({
  name: 'serviceentry-workloadentry',
  about: 'ServiceEntries with 4 ports (http, tcp, https, auto) selecting WorkloadEntries (100 × 10 = 1000 instances by default)',
  defaults: size(100, 10, 300, 200),
  quick: size(20, 5, 20, 10, 0, 4),
  port: HTTP,
  ports: [
    { number: HTTP, name: 'http', protocol: 'HTTP' },
    { number: 7070, name: 'tcp', protocol: 'TCP' },
    { number: 443, name: 'https', protocol: 'HTTPS' },
    { number: 9090, name: 'auto' },
  ],
  vip: false,
  routed: (mesh, svc) => svc.index === mesh.target.index,
});
