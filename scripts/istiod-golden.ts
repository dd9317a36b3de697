/**
 * Captures the real istiod's Envoy config for every proxy of the bookinfo scenario, the oracle that
 * test/scenarios/istiod-parity.test.ts holds meshpilot's generators to.
 *
 *   npx tsx scripts/istiod-golden.ts
 *
 * istiod: pilot-discovery built by /work/shared/istiod/build from the Go module
 * istio.io/istio@v0.0.0-20260827124520-eed52ebb66ad (master after 1.30; its VERSION file says 1.31),
 * started by /work/shared/istiod/run (file mode, no Kubernetes) on testdata/scenarios/bookinfo/config
 * as it is: istiod's file source skips kinds it has no schema for (the gateway's `kind: Secret`), so
 * no filtered copy is needed; the script waits until /debug/configz holds every Istio object.
 * Env: ISTIOD_RUN overrides the run script; other env (ISTIOD_BIN, …) passes through to it.
 *
 * Each proxy connects over plaintext ADS (SotW) with node metadata as Istio's agent sends it
 * (NAMESPACE, NAME, LABELS, CLUSTER_ID Kubernetes, ISTIO_VERSION 1.31.0, INTERCEPTION_MODE, MESH_ID; locality) and
 * subscribes as Envoy does: CDS and LDS wildcard, then EDS for the EDS clusters and RDS for the
 * route names the listeners reference, ACKing every response. Resources become proto3 JSON through
 * meshpilot's registry (TypedStruct and Istio's ALPN config included); an Any type it does not know
 * would keep only its `@type` (the script lists them). Output: testdata/scenarios/bookinfo/istiod/<proxy>.json, sorted by name.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../test/scenarios/bookinfo-fixture.js';
import { configDigest } from '../test/scenarios/istiod-compare.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';
import { byName, capture, configObjects, ISTIOD_MODULE, PROXY_ISTIO_VERSION, startIstiod, toOpaqueJson } from './istiod-capture.js';

const OUT_DIR = join(BOOKINFO_DIR, 'istiod');

async function main(): Promise<void> {
  const started = Date.now();
  const digest = configDigest(join(BOOKINFO_DIR, 'config'));
  const objects = configObjects(join(BOOKINFO_DIR, 'config'));
  const istiod = await startIstiod(join(BOOKINFO_DIR, 'config'), objects.istio);
  const readyMs = Date.now() - started;
  const base = xdsJsonRegistry();
  const opaque = new Set<string>();
  try {
    mkdirSync(OUT_DIR, { recursive: true });
    for (const [name, spec] of Object.entries(BOOKINFO_PROXIES)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const section = (t: keyof typeof SCHEMA_BY_TYPE): JsonValue[] => {
        const schema = SCHEMA_BY_TYPE[t];
        return (byType.get(t)?.resources ?? [])
          .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, base, opaque))
          .sort(byName);
      };
      const doc = {
        source: { istiod: ISTIOD_MODULE, node: spec.id, ISTIO_VERSION: PROXY_ISTIO_VERSION, configSha256: digest },
        listeners: section(TYPE.LDS),
        routes: section(TYPE.RDS),
        clusters: section(TYPE.CDS),
        endpoints: section(TYPE.EDS),
      };
      writeFileSync(join(OUT_DIR, `${name}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
      console.log(
        `${name}: ${doc.listeners.length} listeners, ${doc.routes.length} routes, ${doc.clusters.length} clusters, ${doc.endpoints.length} endpoints`,
      );
    }
  } finally {
    await istiod.stop();
  }
  const warnings = istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l));
  if (warnings.length > 0) console.log(`istiod warnings/errors:\n${warnings.join('\n')}`);
  console.log(`skipped by istiod's file source (no Istio schema): ${objects.skipped.join(', ') || 'none'}`);
  console.log(`opaque Any types (kept as {"@type"}): ${[...opaque].sort().join(', ') || 'none'}`);
  console.log(`capture took ${Date.now() - started} ms (istiod ready after ${readyMs} ms)`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
