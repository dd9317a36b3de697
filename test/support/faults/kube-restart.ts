/**
 * Kubernetes API server restart mid-watch: meshpilot (`--kubeconfig`, through a
 * TCP relay) watches a real kube-apiserver. Three rounds of writes — VirtualServices created,
 * patched and deleted — land (1) while meshpilot's watch connection is cut (a watch gap: resumed
 * from its resourceVersion), (2) right after the API server was restarted while that connection
 * was still cut (same etcd; the new server's watch cache starts later, so the watch gets 410 Gone
 * and lists again), and (3) right after the connection comes back. Every object written ends up
 * in meshpilot's store (GET /debug/configz) exactly as last written, deleted ones gone.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeCluster } from '../kube.js';
import { IstioClient } from '../kube-objects.js';
import { startTcpRelay } from '../kube-proxy.js';
import { startMeshpilot, type Meshpilot } from '../meshpilot-process.js';
import { tempDir } from '../temp-dir.js';
import { waitFor } from '../wait.js';
import { Violations, type FaultFigures } from './figures.js';

const vs = (namespace: string, name: string, host: string): Parameters<IstioClient['create']>[0] => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
});

/** `name → first host` of the VirtualServices of `namespace` in meshpilot's store. */
async function meshpilotView(mp: Meshpilot, namespace: string): Promise<Map<string, string>> {
  const res = await fetch(`http://${mp.httpAddr}/debug/configz`, { signal: AbortSignal.timeout(5000) });
  const body = (await res.json()) as {
    configs: { kind: string; metadata: { name: string; namespace: string }; spec: { hosts?: string[] } }[];
  };
  return new Map(
    body.configs
      .filter((c) => c.kind === 'VirtualService' && c.metadata.namespace === namespace)
      .map((c) => [c.metadata.name, c.spec.hosts?.[0] ?? '']),
  );
}

const same = (a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean =>
  a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

export interface KubeRestartOptions {
  /** Objects created per round (each round also patches and deletes some). Default 10. */
  readonly perRound?: number;
}

/** Needs a cluster with Istio's CRDs applied. */
export async function kubeRestartScenario(cluster: KubeCluster, o: KubeRestartOptions = {}): Promise<FaultFigures & { lost: number }> {
  const perRound = o.perRound ?? 10;
  const t0 = performance.now();
  const v = new Violations();
  const istio = new IstioClient(cluster.clientNode);
  const ns = await cluster.namespace('faults');
  const system = await cluster.namespace('faults-system');
  const want = new Map<string, string>();
  const relay = await startTcpRelay(cluster.url);
  const dir = tempDir('meshpilot-faults-kube-');
  let mp: Meshpilot | undefined;
  let written = 0;
  /** One round: `perRound` creates, then a patch and a delete of earlier objects. */
  const round = async (tag: string): Promise<void> => {
    for (let i = 0; i < perRound; i++) {
      const name = `${tag}-${i}`;
      await istio.create(vs(ns, name, `${name}.example.com`));
      want.set(name, `${name}.example.com`);
      written++;
    }
    const older = [...want.keys()];
    const patched = older[Math.floor(older.length / 2)];
    if (patched !== undefined) {
      await istio.patch('VirtualService', ns, patched, [{ op: 'replace', path: '/spec/hosts/0', value: `${tag}-patched.example.com` }]);
      want.set(patched, `${tag}-patched.example.com`);
      written++;
    }
    const deleted = older[0];
    if (deleted !== undefined) {
      await istio.delete('VirtualService', ns, deleted);
      want.delete(deleted);
      written++;
    }
  };
  try {
    await round('before');
    const kubeconfig = join(dir.path, 'kubeconfig');
    writeFileSync(kubeconfig, cluster.kubeconfigTextVia(relay.url));
    mp = await startMeshpilot({
      configDir: dir.path,
      args: ['--kubeconfig', kubeconfig],
      env: { POD_NAMESPACE: system },
      readyTimeoutMs: 60_000,
    });
    const m = mp;
    await waitFor(async () => same(await meshpilotView(m, ns), want), { timeoutMs: 30_000, description: 'initial list in meshpilot' });

    await relay.cut();
    await round('gap');
    await cluster.restartApiserver();
    await round('restarted');
    await relay.resume();
    const resumedAt = performance.now();
    await round('resumed');
    let view = new Map<string, string>();
    await waitFor(async () => same((view = await meshpilotView(m, ns)), want), {
      timeoutMs: 60_000,
      intervalMs: 100,
      description: 'every write in meshpilot',
    }).catch(() => undefined);
    const convergedMs = performance.now() - resumedAt;
    const lost = [...want].filter(([k, h]) => view.get(k) !== h).map(([k]) => k);
    const extra = [...view.keys()].filter((k) => !want.has(k));
    v.check(lost.length === 0, `lost or stale in meshpilot: ${lost.join(', ')}`);
    v.check(extra.length === 0, `deleted but still in meshpilot: ${extra.join(', ')}`);
    // The restart must have cost the watch its resourceVersion (else this was only a cut).
    const expired = m.logs().filter((l) => l.json?.msg === 'watch expired; listing again').length;
    v.check(expired >= 1, 'no watch expired (410) after the API server restart');
    return {
      cases: written,
      seconds: (performance.now() - t0) / 1000,
      maxMs: convergedMs,
      rssGrowthMiB: 0,
      lost: lost.length + extra.length,
      notes:
        `${written} writes (creates, patches, deletes) before, during a cut watch, right after an API server restart and after the reconnect: ` +
        `${lost.length} lost, ${extra.length} deleted-but-kept, ${expired} watches expired (410 → list again); meshpilot equal to the API ${Math.round(convergedMs)} ms after the connection came back`,
      ...v.failure,
    };
  } finally {
    await relay.resume().catch(() => undefined);
    await mp?.stop();
    await relay.close();
    await dir.remove();
  }
}
