/**
 * A mesh of real Envoy sidecars carrying real traffic, configured by a meshpilot process: pods in
 * network namespaces on a bridge (topology.ts) with meshpilot's capture rules, each running the
 * echo app, a load client and — unless it is a plain pod — agent + Envoy (sidecar.ts). Services
 * and workloads are ServiceEntry/WorkloadEntry in a config directory the test rewrites; pods find
 * services through /etc/hosts entries naming the ServiceEntry VIPs.
 */
import { chmodSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { RunningEnvoy } from '../envoy.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../jwt-ca-meshpilot.js';
import { parsePromText } from '../prom-text.js';
import { tempDir, type TempDir } from '../temp-dir.js';
import { waitFor } from '../wait.js';
import { removeFile, writeYaml } from '../yaml-files.js';
import { startEchoApp, startHttpClient, type EchoApp, type HttpClient, type RequestBatch, type Tally } from './netns-apps.js';
import { startSidecar, type Sidecar } from './sidecar.js';
import { createPodNetwork, type Pod, type PodNetwork } from './topology.js';

export const APP_PORT = 8080;
/** The echo app listens here too, for services declared TCP (plain bytes through tcp_proxy). */
export const TCP_APP_PORT = 9090;
const DOMAIN = 'svc.cluster.local';

export interface WorkloadDef {
  /** Pod name; also the echo app's name (what a tally counts). */
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ip: string;
  /** false: no capture rules and no proxy, as a pod outside the mesh. */
  readonly sidecar: boolean;
}

export interface ServiceDef {
  readonly name: string;
  readonly namespace: string;
  readonly vip: string;
  /** WorkloadEntry labels it selects. */
  readonly selector: Readonly<Record<string, string>>;
  /** HTTP on 8080 (default), or TCP on 9090. */
  readonly protocol?: 'HTTP' | 'TCP';
}

const portOf = (s: ServiceDef): { number: number; name: string; protocol: string } =>
  s.protocol === 'TCP' ? { number: TCP_APP_PORT, name: 'tcp', protocol: 'TCP' } : { number: APP_PORT, name: 'http', protocol: 'HTTP' };

export interface MeshPod {
  readonly def: WorkloadDef;
  readonly pod: Pod;
  readonly app: EchoApp;
  readonly client: HttpClient;
  readonly sidecar?: Sidecar;
}

export interface EnvoyMesh {
  /** The running meshpilot (a new one after `restartMeshpilot`). */
  readonly meshpilot: JwtCaMeshpilot;
  readonly configDir: string;
  readonly pods: ReadonlyMap<string, MeshPod>;
  pod(name: string): MeshPod;
  /** `http://<service FQDN>:<its port><path>`. */
  url(service: string, namespace: string, pathname?: string): string;
  /** Writes a config file (multi-document YAML) meshpilot watches; undefined removes it. */
  apply(file: string, docs: readonly unknown[] | undefined): Promise<void>;
  /** Runs `batch` from `from` until `done(tally)` holds (config convergence), returning that tally. */
  until(from: string, batch: RequestBatch, done: (t: Tally) => boolean, o?: { timeoutMs?: number; pauseMs?: number }): Promise<Tally>;
  /** The active cluster `name` in pod `from`'s Envoy (config_dump), or undefined. */
  cluster(from: string, name: string): Promise<Record<string, unknown> | undefined>;
  /**
   * Waits until every pod in `pods` has an Envoy config_dump (of `resource`, e.g.
   * dynamic_listeners) for which `ok(text)` holds: a policy that load-balanced traffic cannot
   * show to have reached every endpoint.
   */
  untilConfig(pods: readonly string[], resource: string, ok: (dump: string) => boolean, timeoutMs?: number): Promise<void>;
  /** Counters and gauges of pod `from`'s Envoy whose name matches. */
  stats(from: string, filter: RegExp): Promise<Map<string, number>>;
  /**
   * Per sidecar, clusters and listeners still warming: config Envoy accepted but cannot use yet
   * (e.g. a cluster whose endpoints never came), which no rejection counter shows.
   */
  warming(): Promise<Record<string, number>>;
  /** Every sidecar's `*.update_rejected` sum, and meshpilot's pilot_total_xds_rejects. */
  rejects(): Promise<{ envoy: Record<string, number>; pilot: number }>;
  /**
   * Stops meshpilot, runs `whileDown` (the sidecars keep their last config), and starts it again
   * on the same config, CA and secure address, where the agents reconnect.
   */
  restartMeshpilot(whileDown?: () => Promise<void>): Promise<void>;
  /** The last lines of meshpilot's and every proxy's logs, for failure messages. */
  logs(): string;
  stop(): Promise<void>;
}

export const fqdn = (name: string, namespace: string): string => `${name}.${namespace}.${DOMAIN}`;

/** ServiceEntry + WorkloadEntry documents for the mesh: what Kubernetes Services and Pods would give. */
export function registryDocs(workloads: readonly WorkloadDef[], services: readonly ServiceDef[]): unknown[] {
  const meta = (name: string, namespace: string) => ({ name, namespace });
  return [
    ...services.map((s) => ({
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: meta(s.name, s.namespace),
      spec: {
        hosts: [fqdn(s.name, s.namespace)],
        addresses: [s.vip],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [portOf(s)],
        workloadSelector: { labels: s.selector },
      },
    })),
    ...workloads
      .filter((w) => w.sidecar)
      .map((w) => ({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: meta(w.name, w.namespace),
        spec: { address: w.ip, labels: w.labels, serviceAccount: w.serviceAccount },
      })),
  ];
}

async function scrapeRejects(monitoringAddr: string): Promise<number> {
  const text = await (await fetch(`http://${monitoringAddr}/metrics`)).text();
  const fam = parsePromText(text).get('pilot_total_xds_rejects');
  return fam ? fam.samples.reduce((sum, s) => sum + s.value, 0) : 0;
}

export async function startEnvoyMesh(workloads: readonly WorkloadDef[], services: readonly ServiceDef[]): Promise<EnvoyMesh> {
  const dir: TempDir = tempDir('meshpilot-envoy-mesh-');
  // The agents run as the proxy's uid and keep their files below.
  chmodSync(dir.path, 0o711);
  const configDir = path.join(dir.path, 'config');
  await mkdir(configDir);
  await writeYaml(configDir, 'registry.yaml', registryDocs(workloads, services));
  const pods = new Map<string, MeshPod>();
  let net: PodNetwork | undefined;
  let mp: JwtCaMeshpilot | undefined;
  // Every process as it starts, so a failed start stops what did start.
  const running: { stop(): Promise<void> }[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(running.map((r) => r.stop()));
    net?.remove();
    await mp?.mp.stop();
    await dir.remove();
  };
  const logs = (): string =>
    [
      `--- meshpilot ---\n${mp?.mp.tail(20) ?? ''}`,
      ...[...pods.values()].flatMap((p) =>
        p.sidecar
          ? [`--- ${p.def.name} agent ---\n${p.sidecar.agentLog()}\n--- ${p.def.name} envoy ---\n${p.sidecar.envoy.log().slice(-2000)}`]
          : [],
      ),
    ].join('\n');
  try {
    mp = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'));
    const network = (net = createPodNetwork());
    const hosts = new Map(services.map((s) => [fqdn(s.name, s.namespace), s.vip]));
    const cp = mp;
    // allSettled: a pod that fails must not leave the others starting after the cleanup below.
    const started = await Promise.allSettled(
      workloads.map(async (w) => {
        const pod = network.addPod(w.name, w.ip);
        pod.setHosts(hosts);
        if (w.sidecar) await pod.capture();
        const app = await startEchoApp(pod.ns, w.name, w.labels.version ?? 'v1', [APP_PORT, TCP_APP_PORT]);
        running.push(app);
        const client = await startHttpClient(pod.ns);
        running.push(client);
        const sidecar = w.sidecar
          ? await startSidecar(cp, { pod, namespace: w.namespace, serviceAccount: w.serviceAccount, labels: w.labels }, dir.path)
          : undefined;
        if (sidecar) running.push(sidecar);
        pods.set(w.name, { def: w, pod, app, client, ...(sidecar ? { sidecar } : {}) });
      }),
    );
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    const why = `${(err as Error).message}\n${logs()}`;
    await stop();
    throw new Error(why, { cause: err });
  }
  let meshpilot = mp;
  const pod = (name: string): MeshPod => {
    const p = pods.get(name);
    if (!p) throw new Error(`no pod ${name}`);
    return p;
  };
  const envoyOf = (name: string): RunningEnvoy => {
    const s = pod(name).sidecar;
    if (!s) throw new Error(`pod ${name} has no sidecar`);
    return s.envoy;
  };
  return {
    get meshpilot() {
      return meshpilot;
    },
    configDir,
    pods,
    pod,
    url(service, namespace, pathname = '/') {
      const def = services.find((s) => s.name === service && s.namespace === namespace);
      return `http://${fqdn(service, namespace)}:${def ? portOf(def).number : APP_PORT}${pathname}`;
    },
    apply: (file, docs) => (docs === undefined ? removeFile(configDir, file) : writeYaml(configDir, file, docs).then(() => undefined)),
    async until(from, batch, done, { timeoutMs = 30_000, pauseMs = 200 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const t = await pod(from).client.run(batch);
        if (done(t)) return t;
        if (Date.now() > deadline)
          throw new Error(`no convergence within ${timeoutMs} ms; last tally ${JSON.stringify({ ...t, samples: t.samples.slice(0, 1) })}`);
        await new Promise((r) => setTimeout(r, pauseMs));
      }
    },
    async cluster(from, name) {
      const dump = JSON.parse(await envoyOf(from).admin('config_dump?resource=dynamic_active_clusters')) as {
        configs?: { cluster?: Record<string, unknown> }[];
      };
      return dump.configs?.map((c) => c.cluster).find((c) => c?.name === name);
    },
    async untilConfig(names, resource, ok, timeoutMs = 30_000) {
      await waitFor(
        async () => {
          for (const n of names) if (!ok(await envoyOf(n).admin(`config_dump?resource=${resource}`))) return false;
          return true;
        },
        { timeoutMs, description: `${resource} of ${names.join(', ')}` },
      );
    },
    stats: (from, filter) => envoyOf(from).stats(filter),
    async warming() {
      const out: Record<string, number> = {};
      for (const p of pods.values()) {
        if (!p.sidecar) continue;
        const st = await p.sidecar.envoy.stats(/^(cluster_manager\.warming_clusters|listener_manager\.total_listeners_warming)$/);
        out[p.def.name] = [...st.values()].reduce((a, b) => a + b, 0);
      }
      return out;
    },
    async rejects() {
      const envoy: Record<string, number> = {};
      for (const p of pods.values()) if (p.sidecar) envoy[p.def.name] = await p.sidecar.envoy.rejectedUpdates();
      return { envoy, pilot: await scrapeRejects(meshpilot.mp.monitoringAddr) };
    },
    async restartMeshpilot(whileDown) {
      await meshpilot.mp.stop();
      await whileDown?.();
      meshpilot = mp = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'), { secureAddr: meshpilot.secureAddr });
    },
    logs,
    stop,
  };
}
