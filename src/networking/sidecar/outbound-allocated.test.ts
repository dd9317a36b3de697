import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pushFor, serviceEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { generateFor, proxyFor } from '../../../test/support/scenario.js';
import { registerEnvoyGenerators } from '../envoy-generators.js';
import { configCredentials } from '../gateway/config-credentials.js';
import { silentLogger } from '../../util/log.js';
import { GeneratorRegistry } from '../../xds/generator.js';

const objects = [
  serviceEntry('db', 'db.external.test', [{ number: 5432, name: 'tcp', protocol: 'TCP' }], { location: 'MESH_EXTERNAL' }),
  serviceEntry('web', 'web.external.test', [{ number: 8080, name: 'http', protocol: 'HTTP' }], { location: 'MESH_EXTERNAL' }),
];
const allocating = { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' };

test('listeners and routes use allocated addresses only for proxies that consume them; one push context serves both views', () => {
  const push = pushFor(objects);
  const db = push.services().find((s) => s.hostname === 'db.external.test')!;
  const web = push.services().find((s) => s.hostname === 'web.external.test')!;
  assert.ok(db.autoAllocated && web.autoAllocated, 'both hosts have allocated addresses');
  const gens = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  const view = (id: string, metadata: Record<string, string>): { listeners: string[]; domains: string[] } => {
    const g = generateFor(push, gens, proxyFor({ id, labels: { app: 'client' }, metadata }));
    return {
      listeners: g.listeners.map((l) => l.name).filter((n) => n.endsWith('_5432')),
      domains: g.routes.filter((r) => r.name === '8080').flatMap((r) => r.virtualHosts.flatMap((vh) => vh.domains)),
    };
  };
  // Interleaved, so that a cache key missing the view would hand one proxy the other's listeners.
  const v4 = view('sidecar~10.0.0.5~a-0.default~default.svc.cluster.local', allocating);
  const plain = view('sidecar~10.0.0.6~b-0.default~default.svc.cluster.local', { DNS_CAPTURE: 'true' });
  const v6 = view('sidecar~fd00::5~c-0.default~default.svc.cluster.local', allocating);
  const none = view('sidecar~10.0.0.7~d-0.default~default.svc.cluster.local', { DNS_AUTO_ALLOCATE: 'true' });
  assert.deepEqual(v4.listeners, [`${db.autoAllocated.v4}_5432`]);
  assert.ok(v4.domains.includes(web.autoAllocated.v4), v4.domains.join(' '));
  assert.deepEqual(v6.listeners, [`${db.autoAllocated.v6}_5432`]);
  assert.ok(v6.domains.includes(`[${web.autoAllocated.v6}]`), v6.domains.join(' '));
  for (const p of [plain, none]) {
    assert.deepEqual(p.listeners, ['0.0.0.0_5432']);
    assert.ok(!p.domains.some((d) => d.startsWith('240.240.') || d.includes('2001:2::')), p.domains.join(' '));
  }
});
