/**
 * /metrics parsed with a strict Prometheus text-format parser
 * (test/support/prom-text.ts) after a push and a NACK: istiod's metric names, types, labels and
 * buckets, so an Istio control-plane dashboard works unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freePorts } from '../support/ports.js';
import { histogramBuckets, parsePromText, type PromFamily, type PromType } from '../support/prom-text.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
const streams: AdsStream[] = [];

async function scrape(): Promise<Map<string, PromFamily>> {
  assert.ok(mp);
  const res = await fetch(`http://${mp.monitoringAddr}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  return parsePromText(await res.text());
}

function family(m: Map<string, PromFamily>, name: string, type: PromType): PromFamily {
  const f = m.get(name);
  assert.ok(f, `metric ${name} missing; have ${[...m.keys()].join(', ')}`);
  assert.equal(f.type, type, `${name} type`);
  return f;
}

/** Sum of the family's samples named `sample` (default: the family name) matching `labels`. */
function value(f: PromFamily, labels: Record<string, string> = {}, sample = f.name): number {
  return f.samples
    .filter((x) => x.name === sample && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
    .reduce((n, x) => n + x.value, 0);
}

function buckets(f: PromFamily): number[] {
  const b = histogramBuckets(f);
  assert.ok(b.length > 0, `${f.name} has no samples`);
  return b;
}

function labelValues(f: PromFamily, label: string): string[] {
  return [...new Set(f.samples.map((x) => x.labels[label]).filter((v): v is string => v !== undefined))].sort();
}

describe('/metrics (istiod names, labels and buckets)', () => {
  let port = 0;
  before(async () => {
    [port = 0] = await freePorts(1);
    dir = tempDir('meshpilot-metrics-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      workloadEntry('echo-v1', { port, labels: { app: 'echo' } }),
    ]);
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('after a push and a NACK, every pilot metric is there with its labels and buckets', async () => {
    assert.ok(mp && dir);
    const acker = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('m-ack') });
    const nacker = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('m-nack') });
    streams.push(acker, nacker);
    for (const s of [acker, nacker]) {
      s.subscribe(TYPE.LDS, [LISTENER]);
      s.ack((await s.next(TYPE.LDS)).resp);
    }
    acker.onResponse((r) => acker.ack(r.resp));
    nacker.onResponse((r) => nacker.nack(r.resp, 'no thanks'));
    // An endpoint change (EDS-only: reason endpoint) and a forced debug push of everything; the second proxy rejects the LDS.
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      workloadEntry('echo-v1', { port: port + 1, labels: { app: 'echo' } }),
    ]);
    await fetch(`http://${mp.httpAddr}/debug/adsz?push=true`).then((r) => r.text());
    const m = await waitFor(
      async () => {
        const s = await scrape();
        const rejects = s.get('pilot_total_xds_rejects');
        return rejects && value(rejects, { type: 'lds' }) > 0 ? s : undefined;
      },
      { description: 'pilot_total_xds_rejects{type="lds"} > 0' },
    );

    assert.equal(value(family(m, 'pilot_xds', 'gauge')), 2);
    assert.deepEqual(labelValues(family(m, 'pilot_xds', 'gauge'), 'version').length, 1);
    const pushes = family(m, 'pilot_xds_pushes', 'counter');
    assert.ok(value(pushes, { type: 'lds' }) >= 3, JSON.stringify(pushes.samples));
    assert.ok(value(family(m, 'pilot_total_xds_rejects', 'counter'), { type: 'lds' }) >= 1);
    assert.ok(value(family(m, 'pilot_inbound_updates', 'counter'), { type: 'eds' }) >= 1);
    const triggers = family(m, 'pilot_push_triggers', 'counter');
    assert.ok(value(triggers, { type: 'endpoint' }) >= 1, JSON.stringify(triggers.samples));
    assert.ok(value(triggers, { type: 'debug' }) >= 1, JSON.stringify(triggers.samples));
    assert.equal(value(family(m, 'pilot_services', 'gauge')), 1);

    const delay = [0.1, 0.5, 1, 3, 5, 10, 20, 30];
    const pushTime = [0.01, 0.1, 1, 3, 5, 10, 20, 30];
    assert.deepEqual(buckets(family(m, 'pilot_proxy_convergence_time', 'histogram')), delay);
    assert.deepEqual(buckets(family(m, 'pilot_proxy_queue_time', 'histogram')), delay);
    assert.deepEqual(buckets(family(m, 'pilot_debounce_time', 'histogram')), pushTime);
    assert.deepEqual(buckets(family(m, 'pilot_pushcontext_init_seconds', 'histogram')), [0.01, 0.1, 0.5, 1, 3, 5]);
    const xpt = family(m, 'pilot_xds_push_time', 'histogram');
    assert.deepEqual(buckets(xpt), pushTime);
    assert.ok(labelValues(xpt, 'type').includes('lds'), JSON.stringify(labelValues(xpt, 'type')));
    const size = family(m, 'pilot_xds_config_size_bytes', 'histogram');
    assert.deepEqual(buckets(size), [1, 10_000, 1_000_000, 4_000_000, 10_000_000, 40_000_000]);
    assert.ok(labelValues(size, 'type').includes('lds'));
    assert.ok(value(family(m, 'pilot_proxy_queue_time', 'histogram'), {}, 'pilot_proxy_queue_time_count') >= 2);
    assert.ok(value(xpt, { type: 'lds' }, 'pilot_xds_push_time_count') >= 1);

    const reads = family(m, 'xds_cache_reads', 'counter');
    assert.deepEqual(labelValues(reads, 'type'), ['hit', 'miss']);
    assert.ok(value(reads, { type: 'miss' }) >= 1);
    family(m, 'xds_cache_evictions', 'counter');
    const invalidations = family(m, 'meshpilot_xds_cache_invalidations_total', 'counter');
    // The endpoint change and the debug push may be merged into one unscoped push (a clear).
    assert.ok(
      value(invalidations, { type: 'entry' }) + value(invalidations, { type: 'clear' }) >= 1,
      JSON.stringify(invalidations.samples),
    );
    assert.ok(value(family(m, 'xds_cache_size', 'gauge')) >= 1);
    family(m, 'meshpilot_xds_oversized_responses_total', 'counter');
  });
});
