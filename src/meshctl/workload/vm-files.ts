/**
 * The files a VM needs to join the mesh, as `istioctl x workload entry configure` writes them
 * (istioctl/pkg/workload/workload.go): mesh.yaml (the mesh's defaultConfig for the agent, with the
 * group's probe and identity in proxyMetadata), cluster.env (the environment of the agent and of
 * its iptables setup), hosts (how the VM finds istiod), root-cert.pem and istio-token. Pure: the
 * command gathers the inputs from the cluster or from files.
 */
import { stringify as toYaml } from 'yaml';

/** A WorkloadGroup as read (proto JSON of its spec). */
export interface WorkloadGroupInput {
  readonly name: string;
  readonly namespace: string;
  readonly annotations: Readonly<Record<string, string>>;
  readonly spec: {
    readonly metadata?: { readonly labels?: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> };
    readonly template?: {
      readonly serviceAccount?: string;
      readonly network?: string;
      readonly ports?: Readonly<Record<string, number>>;
      readonly labels?: Readonly<Record<string, string>>;
    };
    readonly probe?: Readonly<Record<string, unknown>>;
  };
}

export interface VmFilesInput {
  readonly group: WorkloadGroupInput;
  /** The mesh config (the `istio` ConfigMap's `mesh`, or a file) as parsed YAML; `{}` when there is none. */
  readonly mesh: Readonly<Record<string, unknown>>;
  /** The proxy.istio.io/config annotations, already parsed (group metadata first, then the spec's). */
  readonly proxyConfigOverrides: readonly Readonly<Record<string, unknown>>[];
  readonly istioNamespace: string;
  readonly clusterId: string;
  readonly revision: string;
  readonly autoRegister: boolean;
  readonly captureDns: boolean;
  readonly internalIp?: string;
  readonly externalIp?: string;
  /** The east-west gateway's address for `hosts`; none: an empty hosts file (istioctl warns). */
  readonly ingressIp?: string;
}

export interface VmFiles {
  readonly 'mesh.yaml': string;
  readonly 'cluster.env': string;
  readonly hosts: string;
}

/** A proxy config annotation on the group (istioctl reads it from the group's and the spec's metadata). */
export const PROXY_CONFIG_ANNOTATION = 'proxy.istio.io/config';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const revisioned = (revision: string): boolean => revision !== '' && revision !== 'default';

export function istiodHost(namespace: string, revision: string): string {
  return `${revisioned(revision) ? `istiod-${revision}` : 'istiod'}.${namespace}.svc`;
}

/** The service account of the group's template; istioctl's readWorkloadGroup defaults it to `default`. */
export const serviceAccountOf = (g: WorkloadGroupInput): string => g.spec.template?.serviceAccount || 'default';

/** Istio's labels.CanonicalService: the canonical name and revision from the labels, else the group name and `latest`. */
function canonicalService(labels: Readonly<Record<string, string>>, workloadName: string): [string, string] {
  const name = labels['service.istio.io/canonical-name'] ?? labels['app.kubernetes.io/name'] ?? labels.app ?? workloadName;
  const revision = labels['service.istio.io/canonical-revision'] ?? labels['app.kubernetes.io/version'] ?? labels.version ?? 'latest';
  return [name, revision];
}

/** Go's json.Marshal of a map: keys in order. */
function sortedJson(m: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

/** The ProxyConfig the VM's agent runs with: the mesh's defaultConfig, the overrides, the probe and the workload's identity. */
export function vmProxyConfig(i: VmFilesInput): Record<string, unknown> {
  const g = i.group;
  const base = isRecord(i.mesh.defaultConfig) ? i.mesh.defaultConfig : {};
  let pc: Record<string, unknown> = { ...base };
  const metadata: Record<string, string> = { ...(isRecord(base.proxyMetadata) ? (base.proxyMetadata as Record<string, string>) : {}) };
  for (const o of i.proxyConfigOverrides) {
    pc = { ...pc, ...o };
    if (isRecord(o.proxyMetadata)) Object.assign(metadata, o.proxyMetadata);
  }
  if (revisioned(i.revision) && (pc.discoveryAddress === undefined || pc.discoveryAddress === ''))
    pc.discoveryAddress = `${istiodHost(i.istioNamespace, i.revision)}:15012`;
  const labels: Record<string, string> = { ...g.spec.metadata?.labels, ...g.spec.template?.labels };
  if (g.spec.probe) pc.readinessProbe = g.spec.probe;
  else delete pc.readinessProbe;
  const [canonicalName, canonicalRevision] = canonicalService(labels, g.name);
  const sa = serviceAccountOf(g);
  Object.assign(metadata, {
    CANONICAL_SERVICE: canonicalName,
    CANONICAL_REVISION: canonicalRevision,
    POD_NAMESPACE: g.namespace,
    SERVICE_ACCOUNT: sa,
    TRUST_DOMAIN: typeof i.mesh.trustDomain === 'string' ? i.mesh.trustDomain : '',
    ISTIO_META_CLUSTER_ID: i.clusterId,
    ISTIO_META_MESH_ID: typeof pc.meshId === 'string' ? pc.meshId : '',
    ISTIO_META_NETWORK: g.spec.template?.network ?? '',
    ISTIO_META_WORKLOAD_NAME: g.name,
  });
  const ports = Object.entries(g.spec.template?.ports ?? {})
    .map(([name, containerPort]) => ({ name, containerPort }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (ports.length > 0) metadata.ISTIO_META_POD_PORTS = JSON.stringify(ports);
  labels['service.istio.io/canonical-name'] = canonicalName;
  labels['service.istio.io/canonical-revision'] = canonicalRevision;
  metadata.ISTIO_METAJSON_LABELS = sortedJson(labels);
  if (i.captureDns) metadata.ISTIO_META_DNS_CAPTURE = 'true';
  if (i.autoRegister) metadata.ISTIO_META_AUTO_REGISTER_GROUP = g.name;
  pc.proxyMetadata = metadata;
  return pc;
}

/** Go's shellescape.Quote: bare when safe, else single-quoted. */
export function shellQuote(s: string): string {
  if (s === '') return "''";
  if (/^[\w@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replaceAll("'", `'"'"'`)}'`;
}

function clusterEnv(i: VmFilesInput, pc: Record<string, unknown>): string {
  const g = i.group;
  const ports = Object.entries(g.spec.template?.ports ?? {})
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([, p]) => String(p));
  // 22 keeps the VM reachable over ssh whatever the capture; 15090 (Prometheus) and 15021 (health) are Envoy's own.
  let exclude = '22,15090,15021';
  const statusPort = typeof pc.statusPort === 'number' ? pc.statusPort : 0;
  if (statusPort !== 15090 && statusPort !== 15021) exclude += statusPort !== 0 ? `,${statusPort}` : ',15020';
  const overrides: Record<string, string> = {
    ISTIO_INBOUND_PORTS: ports.length > 0 ? ports.join(',') : '*',
    ISTIO_NAMESPACE: g.namespace,
    ISTIO_SERVICE: `${g.name}.${g.namespace}`,
    ISTIO_SERVICE_CIDR: '*',
    ISTIO_LOCAL_EXCLUDE_PORTS: exclude,
    SERVICE_ACCOUNT: serviceAccountOf(g),
  };
  if (revisioned(i.revision)) overrides.CA_ADDR = `${istiodHost(i.istioNamespace, i.revision)}:15012`;
  if (i.internalIp) overrides.ISTIO_SVC_IP = i.internalIp;
  else if (i.externalIp) {
    overrides.ISTIO_SVC_IP = i.externalIp;
    overrides.REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION = 'true';
  }
  const env = { ...(pc.proxyMetadata as Record<string, string>), ...overrides };
  return `${Object.entries(env)
    .map(([k, v]) => `${k}=${shellQuote(v)}`)
    .sort()
    .join('\n')}\n`;
}

export function vmFiles(i: VmFilesInput): VmFiles {
  const pc = vmProxyConfig(i);
  const hosts = i.ingressIp ? `${i.ingressIp} ${istiodHost(i.istioNamespace, i.revision)}\n` : '';
  return { 'mesh.yaml': toYaml({ defaultConfig: pc }), 'cluster.env': clusterEnv(i, pc), hosts };
}
