/**
 * What the process-level fault scenarios share: a small mesh written as files, meshpilot started
 * on it as a child process (built dist/ with plain node when given, else under tsx), and the
 * simulated sidecars' plans for the load generators.
 */
import type { ProxyPlan } from '../load-gen/protocol.js';
import { meshDocs, workloadAddress } from '../lib/mesh-docs.js';
import { scrapeMetrics, pushesByType } from '../lib/metrics.js';
import { startMeshpilot, type Meshpilot } from '../../test/support/meshpilot-process.js';
import { tempDir, type TempDir } from '../../test/support/temp-dir.js';
import { writeYaml } from '../../test/support/yaml-files.js';

export const MESH_SHAPE = { services: 20, namespaces: 2, endpoints: 2, sidecar: false } as const;

export async function meshDir(): Promise<TempDir> {
  const dir = tempDir('meshpilot-faults-');
  await writeYaml(dir.path, 'mesh.yaml', meshDocs(MESH_SHAPE));
  return dir;
}

/** `n` sidecars spread over the mesh's services (addresses past the WorkloadEntries'). */
export function sidecarPlans(n: number): ProxyPlan[] {
  return Array.from({ length: n }, (_, j) => {
    const svc = j % MESH_SHAPE.services;
    return {
      kind: 'sidecar',
      pod: `svc-${svc}-${j}`,
      namespace: `ns-${svc % MESH_SHAPE.namespaces}`,
      ip: workloadAddress(10_000 + j),
      labels: { app: `svc-${svc}` },
    };
  });
}

export interface MeshpilotRun {
  readonly cliJs?: string;
  readonly env?: Record<string, string>;
  readonly args?: readonly string[];
}

export function startOn(dir: TempDir, run: MeshpilotRun, extraArgs: readonly string[] = []): Promise<Meshpilot> {
  return startMeshpilot({
    configDir: dir.path,
    retainLines: false,
    readyTimeoutMs: 120_000,
    ...(run.env ? { env: run.env } : {}),
    args: [...(run.args ?? []), ...extraArgs],
    ...(run.cliJs !== undefined ? { cliJs: run.cliJs } : {}),
  });
}

/** Connected proxies (pilot_xds) and responses sent (pilot_xds_pushes, all types) of one meshpilot. */
export async function xdsCounts(mp: Meshpilot): Promise<{ connected: number; responses: number }> {
  const m = await scrapeMetrics(mp.monitoringAddr);
  if (typeof m === 'string') return { connected: 0, responses: 0 };
  const connected = Object.entries(m)
    .filter(([k]) => k === 'pilot_xds' || k.startsWith('pilot_xds{'))
    .reduce((a, [, v]) => a + v, 0);
  const responses = Object.values(pushesByType(m)).reduce((a, b) => a + b, 0);
  return { connected, responses };
}
