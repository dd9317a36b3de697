/** Istio's `http` benchmark input, grown: HTTP ServiceEntries with a VIP, v1/v2 subsets and a 90/10 VirtualService each. */
import { httpScenario, size } from './common.js';

export const http = httpScenario({
  name: 'http',
  about: 'HTTP services (ServiceEntry + WorkloadEntries, DestinationRule v1/v2, VirtualService 90/10)',
  defaults: size(100, 3, 500, 500),
  quick: size(20, 2, 20, 20, 0, 4),
  port: 8080,
});
