/**
 * Captures the real istiod's listeners and routes for the sidecars of
 * test/scenarios/dns-listeners-fixture.ts on testdata/dns-listeners/config: ServiceEntries without
 * addresses, seen by proxies with and without DNS_CAPTURE + DNS_AUTO_ALLOCATE.
 *
 *   npx tsx scripts/istiod-dns-listeners-golden.ts
 *
 * istiod in file mode with PILOT_ENABLE_IP_AUTOALLOCATE=false (its allocating controller needs
 * Kubernetes; its registry then allocates, the allocation meshpilot implements), captured over ADS
 * as scripts/istiod-capture.ts does. Output: testdata/dns-listeners/istiod/<proxy>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import {
  DNS_LISTENERS_CONFIG_DIR,
  DNS_LISTENERS_ISTIOD_DIR,
  DNS_LISTENERS_ISTIOD_ENV,
  DNS_LISTENERS_PROXIES,
} from '../test/scenarios/dns-listeners-fixture.js';
import { configDigest } from '../test/scenarios/istiod-compare.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';
import { ISTIOD_MODULE, byName, capture, configObjects, startIstiod, toOpaqueJson } from './istiod-capture.js';

async function main(): Promise<void> {
  for (const [k, v] of Object.entries(DNS_LISTENERS_ISTIOD_ENV)) process.env[k] = v;
  const istiod = await startIstiod(DNS_LISTENERS_CONFIG_DIR, configObjects(DNS_LISTENERS_CONFIG_DIR).istio);
  const registry = xdsJsonRegistry();
  const opaque = new Set<string>();
  try {
    mkdirSync(DNS_LISTENERS_ISTIOD_DIR, { recursive: true });
    for (const [proxy, spec] of Object.entries(DNS_LISTENERS_PROXIES)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const section = (type: typeof TYPE.LDS | typeof TYPE.RDS): JsonValue[] => {
        const schema = SCHEMA_BY_TYPE[type];
        return (byType.get(type)?.resources ?? [])
          .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, registry, opaque))
          .sort(byName);
      };
      const doc = {
        source: {
          istiod: ISTIOD_MODULE,
          node: spec.id,
          env: DNS_LISTENERS_ISTIOD_ENV,
          configSha256: configDigest(DNS_LISTENERS_CONFIG_DIR),
        },
        listeners: section(TYPE.LDS),
        routes: section(TYPE.RDS),
      };
      writeFileSync(join(DNS_LISTENERS_ISTIOD_DIR, `${proxy}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
    }
    const warnings = istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l));
    console.log(`${Object.keys(DNS_LISTENERS_PROXIES).length} proxies; opaque: ${[...opaque].sort().join(', ') || 'none'}`);
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
