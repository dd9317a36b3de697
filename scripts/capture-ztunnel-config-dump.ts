/**
 * Captures the real ztunnel's /config_dump for the small ambient mesh of
 * test/support/ztunnel-mesh.ts (meshpilot from a config directory, ztunnel in dedicated mode) into
 * testdata/meshctl/ztunnel-config/config_dump.json, the input of meshctl ztunnel-config's table tests.
 *
 *   npx tsx scripts/capture-ztunnel-config-dump.ts      (root, and a ztunnel binary: see test/support/ztunnel.ts)
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startZtunnelMesh } from '../test/support/ztunnel-mesh.js';
import { ztunnelSkipReason } from '../test/support/ztunnel.js';

const OUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../testdata/meshctl/ztunnel-config/config_dump.json');

const skip = ztunnelSkipReason();
if (skip) throw new Error(skip);
const mesh = await startZtunnelMesh();
try {
  const r = await mesh.ztunnel.admin('/config_dump');
  if (r.status !== 200) throw new Error(`/config_dump: HTTP ${r.status}`);
  // Indented for review; the content is ztunnel's, unchanged.
  await writeFile(OUT, JSON.stringify(JSON.parse(r.body), null, 2) + '\n');
  process.stdout.write(`wrote ${OUT}\n`);
} finally {
  await mesh.stop();
}
