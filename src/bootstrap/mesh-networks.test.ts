import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { NetworkSettings } from '../model/index.js';
import { createLogger } from '../util/log.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { NetworkWatch, type ClusterNetworkSource } from './mesh-networks.js';

const dir = tempDir('meshpilot-mesh-networks-');
after(() => dir.remove());

const GW = (address: string) => `networks:\n  n2:\n    gateways:\n      - address: ${address}\n        port: 15443\n`;
const gatewaysOf = (s: NetworkSettings): string[] =>
  Object.values(s.meshNetworks.networks).flatMap((n) => n.gateways.map((g) => g.address ?? ''));

function watchOn(file: string | undefined, cluster?: ClusterNetworkSource): { watch: NetworkWatch; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ sink: (l) => lines.push(l), level: 'info' });
  return { watch: new NetworkWatch({ file, cluster, clusterId: 'Kubernetes', kubernetes: true, logger, settleMs: 20 }), lines };
}

describe('NetworkWatch', () => {
  it('--meshNetworks: read at start, reloaded when the file is replaced; an invalid edit keeps the last good networks', async () => {
    const file = join(dir.path, 'meshNetworks');
    writeFileSync(file, GW('192.0.2.1'));
    const { watch, lines } = watchOn(file);
    const seen: NetworkSettings[] = [];
    watch.onChange((s) => seen.push(s));
    try {
      assert.deepEqual(gatewaysOf(await watch.start()), ['192.0.2.1']);
      // As a ConfigMap volume or an editor does: a new file renamed over the old one.
      writeFileSync(`${file}.tmp`, GW('192.0.2.2'));
      renameSync(`${file}.tmp`, file);
      await waitFor(() => seen.length === 1, { timeoutMs: 5000, intervalMs: 20, description: 'the reload' });
      assert.deepEqual(gatewaysOf(watch.current()), ['192.0.2.2']);
      writeFileSync(file, GW('192.0.2.2').replace('15443', '0'));
      await waitFor(() => lines.some((l) => l.includes('invalid mesh networks')), {
        timeoutMs: 5000,
        intervalMs: 20,
        description: 'the error',
      });
      assert.match(
        lines.find((l) => l.includes('invalid mesh networks'))!,
        /line 5: networks\[n2\]\.gateways\[0\]\.port: port number 0/,
      );
      assert.equal(seen.length, 1);
      assert.deepEqual(gatewaysOf(watch.current()), ['192.0.2.2']);
    } finally {
      await watch.stop();
    }
  });

  it('an invalid --meshNetworks file stops the start with its line; a missing one too', async () => {
    const file = join(dir.path, 'bad');
    writeFileSync(file, 'networks:\n  n1:\n    endpoints:\n      - fromCidr: nope\n');
    await assert.rejects(
      watchOn(file).watch.start(),
      /--meshNetworks .*bad: line 4: networks\[n1\]\.endpoints\[0\]\.fromCidr: nope is not a valid IP/,
    );
    await assert.rejects(watchOn(join(dir.path, 'absent')).watch.start(), /--meshNetworks .*absent: ENOENT/);
  });

  it("a cluster's ConfigMap key and system namespace label: each change is published once, a bad key ignored", async () => {
    let text = GW('192.0.2.1');
    let label = '';
    let fire = (): void => {};
    const cluster: ClusterNetworkSource = {
      origin: 'ConfigMap istio-system/istio key meshNetworks',
      start: () => Promise.resolve(),
      stop: () => Promise.resolve(),
      meshNetworksText: () => text,
      systemNamespaceNetwork: () => label,
      onChange: (fn) => (fire = fn),
    };
    const { watch, lines } = watchOn(undefined, cluster);
    const seen: NetworkSettings[] = [];
    watch.onChange((s) => seen.push(s));
    assert.deepEqual(gatewaysOf(await watch.start()), ['192.0.2.1']);
    label = 'net-a';
    fire();
    assert.equal(seen.at(-1)?.systemNamespaceNetwork, 'net-a');
    fire();
    assert.equal(seen.length, 1, 'nothing changed: nothing published');
    text = 'networks: [';
    fire();
    assert.equal(seen.length, 1);
    assert.ok(lines.some((l) => l.includes('invalid mesh networks') && l.includes('ConfigMap istio-system/istio key meshNetworks')));
    text = GW('192.0.2.9');
    fire();
    assert.deepEqual(gatewaysOf(seen.at(-1)!), ['192.0.2.9']);
  });
});
