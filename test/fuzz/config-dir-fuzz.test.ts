/**
 * Through a real watched directory: fuzzed files written into a directory that a
 * running FileSource watches, feeding a DiscoveryServer with the real generators, read by a
 * sidecar over gRPC. After each case's bad files, a valid change (a new ServiceEntry in another
 * file) must reach the sidecar's CDS within a second while the bad files stay; the errors name
 * the files; valid documents beside invalid ones apply. Fewer cases than in-process (each writes
 * files and waits for a push).
 */
import assert from 'node:assert/strict';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { formatConfigError } from '../../src/config/config.js';
import { FileSource } from '../../src/config/sources/file-source.js';
import { ConfigStore } from '../../src/config/store.js';
import type { KindName } from '../../src/config/kinds.js';
import { silentLogger } from '../../src/util/log.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { breaksFile, describeFile, fuzzFile, type FuzzFile } from '../support/fuzz/config-mutations.js';
import { firstValid } from '../support/fuzz/config-properties.js';
import { FuzzFigures, fuzzParams } from '../support/fuzz/runs.js';
import { startFuzzXdsServer, type FuzzXdsServer } from '../support/fuzz/xds-fuzz-server.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { serviceEntry } from '../support/mesh-fixtures.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { writeYaml } from '../support/yaml-files.js';
import { waitFor } from '../support/wait.js';

/** The bound: a valid change converges within a second while bad files sit beside it. */
const CONVERGE_MS = 1000;

let dir: TempDir | undefined;
let source: FileSource | undefined;
let srv: FuzzXdsServer | undefined;
let sidecar: AdsStream | undefined;
const store = new ConfigStore();

const clusterOf = (host: string): string => `outbound|8080||${host}`;

/** Waits for a CDS response naming `cluster` (ACKing each on the way), as Envoy keeps up with pushes. */
async function waitForCluster(cluster: string, timeoutMs: number): Promise<void> {
  assert.ok(sidecar);
  await sidecar.nextMatching(TypeUrl.Cluster, (r) => r.resp.resources.some((a) => Buffer.from(a.value).includes(cluster)), {
    timeoutMs,
    describe: () =>
      `${cluster} did not reach the sidecar within ${timeoutMs} ms; errors: ${[...store.errors().values()].flat().map(formatConfigError).join('\n').slice(0, 1500)}`,
  });
}

describe('fuzzed files in a watched directory', () => {
  before(async () => {
    dir = tempDir('meshpilot-config-fuzz-');
    await writeYaml(dir.path, 'zz-sentinel.yaml', [
      serviceEntry('sentinel', { host: 'sentinel-0.default.svc.cluster.local', selector: { app: 's' } }),
    ]);
    source = new FileSource({ dir: dir.path, logger: silentLogger, debounceMs: 10 });
    await source.start(store);
    srv = await startFuzzXdsServer({ store });
    sidecar = AdsStream.open(srv.addr, { node: { id: 'sidecar~10.1.0.1~fuzz-reader.default~default.svc.cluster.local' } });
    sidecar.subscribe(TypeUrl.Cluster, []);
    await waitForCluster(clusterOf('sentinel-0.default.svc.cluster.local'), 10_000);
  });

  after(async () => {
    sidecar?.close();
    await source?.stop();
    await srv?.stop();
    await dir?.remove();
  });

  it('bad files never stop a later valid change from converging within a second; errors name the files; valid objects beside them apply', async () => {
    assert.ok(dir && source);
    const d = dir.path;
    const src = source;
    const figures = new FuzzFigures();
    const readFigures = new FuzzFigures();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fuzzFile({ maxDocs: 4 }), { minLength: 1, maxLength: 2 }), async (files) => {
        const written: FuzzFile[] = files.map((f, i) => ({ ...f, name: `bad-${i}.${f.name.split('.').pop() ?? 'yaml'}` }));
        const tRead = performance.now();
        for (const f of written) await writeBytesAtomic(d, f.name, f.bytes);
        // A marker written after them: once it is in the store, the bad files were read too.
        const marker = `marker-${n}`;
        await writeYaml(d, 'zz-marker.yaml', [
          serviceEntry(marker, { host: `${marker}.default.svc.cluster.local`, selector: { app: 'm' } }),
        ]);
        await waitFor(() => store.snapshot().get('ServiceEntry', 'default', marker), {
          timeoutMs: 10_000,
          description: `${marker} read after ${written.map((f) => f.name).join(', ')}`,
        });
        await src.settled();
        readFigures.record(performance.now() - tRead, () => written.map(describeFile).join(' + '));

        // The bad files stay; a valid change in another file must still get through, quickly.
        const host = `sentinel-${++n}.default.svc.cluster.local`;
        const t0 = performance.now();
        await writeYaml(d, 'zz-sentinel.yaml', [serviceEntry('sentinel', { host, selector: { app: 's' } })]);
        await waitForCluster(clusterOf(host), CONVERGE_MS * 5); // a clear failure message beats a timeout; the bound is checked below
        const ms = performance.now() - t0;
        figures.record(ms, () => written.map(describeFile).join(' + '));
        assert.ok(ms < CONVERGE_MS, `a valid change took ${ms.toFixed(0)} ms to converge beside ${written.map(describeFile).join(' + ')}`);

        const errors = [...store.errors().values()].flat();
        const snap = store.snapshot();
        for (const f of written) {
          const path = `${d}/${f.name}`;
          if (breaksFile(f.corruption))
            assert.ok(
              errors.some((e) => e.origin.file === path),
              `no error names ${f.name} (${describeFile(f)})`,
            );
          if (f.corruption !== 'none') continue;
          for (const key of firstValid(f.docs).keys()) {
            const [kind, ns, ...name] = key.split('/');
            assert.ok(snap.get(kind as KindName, ns ?? '', name.join('/')), `valid ${key} from ${f.name} not applied`);
          }
        }
      }),
      fuzzParams({ ci: 30, share: 0.02 }),
    );
    process.stderr.write(`# ${readFigures.summary('config fuzz (watched directory, bad files written → read)')}\n`);
    process.stderr.write(`# ${figures.summary('config fuzz (watched directory, valid change → sidecar CDS)')}\n`);
  });
});

/** The bytes as they are (non-UTF-8 included), renamed into place as editors do. */
async function writeBytesAtomic(dir: string, name: string, bytes: Buffer): Promise<void> {
  const tmp = join(dir, `.${name}.tmp`);
  await writeFile(tmp, bytes);
  await rename(tmp, join(dir, name));
}
