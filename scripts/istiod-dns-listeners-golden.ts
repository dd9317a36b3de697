/**
 * Captures the real istiod's listeners, routes and clusters for the sidecars of
 * test/scenarios/dns-listeners-fixture.ts on testdata/dns-listeners/config: ServiceEntries without
 * addresses, seen by proxies with and without DNS_CAPTURE + DNS_AUTO_ALLOCATE.
 *
 *   npx tsx scripts/istiod-dns-listeners-golden.ts
 *
 * istiod in file mode with PILOT_ENABLE_IP_AUTOALLOCATE=false (its allocating controller needs
 * Kubernetes; its registry then allocates, the allocation meshpilot implements), captured over ADS
 * as scripts/istiod-capture.ts does. Output: testdata/dns-listeners/istiod/<proxy>.json; then the
 * dual-stack proxies again from an istiod with ISTIO_DUAL_STACK=true, into
 * testdata/dns-listeners/istiod-dual-stack/<proxy>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import {
  DNS_LISTENERS_CONFIG_DIR,
  DNS_LISTENERS_DUAL_STACK_ENV,
  DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR,
  DNS_LISTENERS_DUAL_STACK_PROXIES,
  DNS_LISTENERS_ISTIOD_DIR,
  DNS_LISTENERS_ISTIOD_ENV,
  DNS_LISTENERS_PROXIES,
} from '../test/scenarios/dns-listeners-fixture.js';
import type { NodeSpec } from '../test/support/scenario.js';
import { configDigest } from '../test/scenarios/istiod-compare.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';
import { ISTIOD_MODULE, byName, capture, configObjects, startIstiod, toOpaqueJson } from './istiod-capture.js';

async function main(): Promise<void> {
  await captureAll(DNS_LISTENERS_ISTIOD_ENV, DNS_LISTENERS_PROXIES, DNS_LISTENERS_ISTIOD_DIR);
  await captureAll(DNS_LISTENERS_DUAL_STACK_ENV, DNS_LISTENERS_DUAL_STACK_PROXIES, DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR);
}

async function captureAll(
  env: Readonly<Record<string, string>>,
  proxies: Readonly<Record<string, NodeSpec>>,
  outDir: string,
): Promise<void> {
  for (const k of Object.keys(DNS_LISTENERS_DUAL_STACK_ENV)) delete process.env[k];
  for (const [k, v] of Object.entries(env)) process.env[k] = v;
  const istiod = await startIstiod(DNS_LISTENERS_CONFIG_DIR, configObjects(DNS_LISTENERS_CONFIG_DIR).istio);
  const registry = xdsJsonRegistry();
  const opaque = new Set<string>();
  try {
    mkdirSync(outDir, { recursive: true });
    for (const [proxy, spec] of Object.entries(proxies)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const section = (type: typeof TYPE.LDS | typeof TYPE.RDS | typeof TYPE.CDS): JsonValue[] => {
        const schema = SCHEMA_BY_TYPE[type];
        return (byType.get(type)?.resources ?? [])
          .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, registry, opaque))
          .sort(byName);
      };
      const doc = {
        source: {
          istiod: ISTIOD_MODULE,
          node: spec.id,
          env,
          configSha256: configDigest(DNS_LISTENERS_CONFIG_DIR),
        },
        listeners: section(TYPE.LDS),
        routes: section(TYPE.RDS),
        clusters: section(TYPE.CDS),
      };
      writeFileSync(join(outDir, `${proxy}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
    }
    const warnings = istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l));
    console.log(`${outDir}: ${Object.keys(proxies).length} proxies; opaque: ${[...opaque].sort().join(', ') || 'none'}`);
    if (warnings.length > 0) console.log(`istiod: ${warnings.join('\nistiod: ')}`);
  } finally {
    await istiod.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
