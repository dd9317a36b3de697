import { join } from 'node:path';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { REPO_ROOT } from '../support/paths.js';
import { generateFor, loadScenario, proxyFor, type GeneratedConfig, type NodeSpec } from '../support/scenario.js';

export const BOOKINFO_DIR = join(REPO_ROOT, 'testdata/scenarios/bookinfo');

const sidecar = (name: string, ip: string, ns: string, labels: Record<string, string>): NodeSpec => ({
  id: `sidecar~${ip}~${name}.${ns}~${ns}.svc.cluster.local`,
  labels,
  locality: { region: 'us-east1', zone: 'us-east1-b' },
});

/** The proxies of the scenario, by the golden file name their config is kept under. */
export const BOOKINFO_PROXIES: Readonly<Record<string, NodeSpec>> = {
  productpage: sidecar('productpage-v1-1', '10.1.0.10', 'bookinfo', { app: 'productpage', version: 'v1' }),
  'reviews-v1': sidecar('reviews-v1-1', '10.1.0.21', 'bookinfo', { app: 'reviews', version: 'v1' }),
  ratings: sidecar('ratings-v1-1', '10.1.0.30', 'bookinfo', { app: 'ratings', version: 'v1' }),
  details: sidecar('details-v1-1', '10.1.0.40', 'bookinfo', { app: 'details', version: 'v1' }),
  // No Sidecar in `other`: sees the whole mesh, ALLOW_ANY.
  legacy: sidecar('legacy-1', '10.1.1.10', 'other', { app: 'legacy' }),
  'ingress-gateway': {
    id: 'router~10.2.0.1~istio-ingressgateway-1.istio-system~istio-system.svc.cluster.local',
    labels: { istio: 'ingressgateway', app: 'istio-ingressgateway' },
    locality: { region: 'us-east1', zone: 'us-east1-b' },
  },
};

export type BookinfoProxy = keyof typeof BOOKINFO_PROXIES;

/** Loads the scenario once and generates every proxy's config with the production generators. */
export async function generateBookinfo(): Promise<Map<string, GeneratedConfig>> {
  const { push } = await loadScenario(join(BOOKINFO_DIR, 'config'));
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  const out = new Map<string, GeneratedConfig>();
  for (const [name, spec] of Object.entries(BOOKINFO_PROXIES)) out.set(name, generateFor(push, generators, proxyFor(spec)));
  return out;
}
