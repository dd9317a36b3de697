/**
 * Captures the real istiod's listeners for every proxy of every Telemetry scenario
 * (testdata/scenarios/telemetry/<scenario>: base services + telemetry.yaml, mesh config mesh.yaml),
 * the oracle test/scenarios/telemetry-parity.test.ts holds meshpilot to.
 *
 *   npx tsx scripts/istiod-telemetry-golden.ts [scenario ...]
 *
 * istiod: /work/shared/istiod/run (file mode reads Telemetry) with `--meshConfig <scenario>/mesh.yaml`;
 * capture over ADS as scripts/istiod-capture.ts does (Envoy's subscription order, every response
 * ACKed), node metadata as the fixture's (ISTIO_VERSION 1.28.0, see telemetry-fixture.ts). Only
 * listeners are kept (Telemetry shapes nothing else). Output: <scenario>/istiod/<proxy>.json.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary, type JsonValue } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import {
  TELEMETRY_DIR,
  TELEMETRY_PROXIES,
  TELEMETRY_PROXY_VERSION,
  TELEMETRY_SCENARIOS,
  scenarioConfigDir,
} from '../test/scenarios/telemetry-fixture.js';
import { configDigest } from '../test/scenarios/istiod-compare.js';
import { chosenScenarios } from './istiod-capture.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';

// istiod-capture's runner takes no mesh config: a wrapper adds the scenario's (read when istiod starts).
const wrapperDir = mkdtempSync(join(tmpdir(), 'istiod-telemetry-'));
const wrapper = join(wrapperDir, 'run');
writeFileSync(
  wrapper,
  `#!/bin/sh\nexec ${process.env.ISTIOD_RUN ?? '/work/shared/istiod/run'} "$@" --meshConfig "$TELEMETRY_MESH_CONFIG"\n`,
);
chmodSync(wrapper, 0o755);
process.env.ISTIOD_RUN = wrapper;
const { ISTIOD_MODULE, byName, capture, configObjects, startIstiod, toOpaqueJson } = await import('./istiod-capture.js');

async function captureScenario(name: string): Promise<void> {
  const dir = scenarioConfigDir(name);
  process.env.TELEMETRY_MESH_CONFIG = join(TELEMETRY_DIR, name, 'mesh.yaml');
  const istiod = await startIstiod(dir, configObjects(dir).istio);
  const base = xdsJsonRegistry();
  const opaque = new Set<string>();
  try {
    const out = join(TELEMETRY_DIR, name, 'istiod');
    mkdirSync(out, { recursive: true });
    for (const [proxy, spec] of Object.entries(TELEMETRY_PROXIES)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const schema = SCHEMA_BY_TYPE[TYPE.LDS];
      const listeners: JsonValue[] = (byType.get(TYPE.LDS)?.resources ?? [])
        .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, base, opaque))
        .sort(byName);
      const doc = {
        source: {
          istiod: ISTIOD_MODULE,
          node: spec.id,
          ISTIO_VERSION: TELEMETRY_PROXY_VERSION,
          configSha256: configDigest(dir),
          mesh: `${name}/mesh.yaml`,
        },
        listeners,
      };
      writeFileSync(join(out, `${proxy}.json`), `${JSON.stringify(doc, undefined, 2)}\n`);
    }
    const warnings = istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l));
    console.log(
      `${name}: ${Object.keys(TELEMETRY_PROXIES).length} proxies; opaque: ${[...opaque].sort().join(', ') || 'none'}${warnings.length > 0 ? `\n  istiod: ${warnings.join('\n  istiod: ')}` : ''}`,
    );
  } catch (err) {
    writeFileSync(join(tmpdir(), `istiod-telemetry-${name}.log`), istiod.log.join('\n'));
    console.error(`${name}: istiod's log in ${join(tmpdir(), `istiod-telemetry-${name}.log`)}`);
    throw err;
  } finally {
    await istiod.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  for (const name of chosenScenarios(TELEMETRY_SCENARIOS)) await captureScenario(name);
} finally {
  rmSync(wrapperDir, { recursive: true, force: true });
}
