/**
 * `meshctl x workload entry configure`: istioctl's command of that name. With a cluster (-k /
 * --kubeconfig, --context or KUBECONFIG) it reads what istioctl reads — the WorkloadGroup (-f or
 * --name/-n), the `istio` mesh ConfigMap, the cluster ID from the injector ConfigMap, the
 * `istio-ca-root-cert` ConfigMap, the east-west gateway's address — and requests a token for the
 * group's service account (audience istio-ca). Without one (meshpilot's file mode) the group comes
 * from -f, the mesh config from --meshConfig, the root certificate from --rootCert (meshpilot's
 * --caDir/root-cert.pem), and no token is written: there is no API server to issue one.
 */
import { chmod, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { toJson, type JsonObject } from '@bufbuild/protobuf';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { formatConfigError, parseConfigFile, validateObject, type Config, type RawObject } from '../../config/index.js';
import { WorkloadGroupSchema } from '../../gen/networking/v1alpha3/workload_group_pb.js';
import type { KubeClient } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';
import { CliExit, EXIT, UsageError, type CliIO } from '../io.js';
import { PROXY_CONFIG_ANNOTATION, serviceAccountOf, vmFiles, type WorkloadGroupInput } from './vm-files.js';

interface ConfigureOpts {
  file?: string;
  name?: string;
  namespace?: string;
  output?: string;
  clusterID?: string;
  tokenDuration: string;
  ingressService: string;
  ingressIP?: string;
  autoregister?: boolean;
  captureDns: string;
  internalIP?: string;
  externalIP?: string;
  revision: string;
  meshConfig?: string;
  rootCert?: string;
  istioNamespace: string;
  kubeconfig?: string;
  context?: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function groupInput(c: Config<'WorkloadGroup'>): WorkloadGroupInput {
  return {
    name: c.meta.name,
    namespace: c.meta.namespace,
    annotations: c.meta.annotations,
    spec: toJson(WorkloadGroupSchema, c.spec) as JsonObject,
  };
}

/** One WorkloadGroup document, validated as meshpilot validates config; errors name the file, line and field. */
function validGroup(doc: RawObject, origin: string, defaultNamespace: string): WorkloadGroupInput {
  const r = validateObject(doc, { file: origin }, { defaultNamespace });
  if (!r.ok) throw new UsageError(r.errors.map(formatConfigError).join('\n'));
  if (r.value.meta.kind !== 'WorkloadGroup') throw new UsageError(`${origin}: a ${r.value.meta.kind}, not a WorkloadGroup`);
  return groupInput(r.value as Config<'WorkloadGroup'>);
}

async function groupFromFile(file: string, io: CliIO, namespace: string): Promise<WorkloadGroupInput> {
  const abs = path.resolve(io.cwd, file);
  const text = await readFile(abs, 'utf8').catch((err: unknown) => {
    throw new UsageError(`cannot read the WorkloadGroup file ${file}: ${errorMessage(err)}`);
  });
  const parsed = parseConfigFile(text, file);
  if (!parsed.ok) throw new UsageError(parsed.errors.map(formatConfigError).join('\n'));
  const doc = parsed.value.documents.find((d) => d.object.kind === 'WorkloadGroup');
  if (!doc) throw new UsageError(`${file}: no WorkloadGroup in the file`);
  return validGroup(doc.object, `${file}:${doc.origin.line ?? 1}`, namespace);
}

/** The proxy.istio.io/config annotations of the group and of its spec's metadata, parsed. */
function proxyConfigOverrides(g: WorkloadGroupInput): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const [where, annotations] of [
    ['metadata.annotations', g.annotations],
    ['spec.metadata.annotations', g.spec.metadata?.annotations ?? {}],
  ] as const) {
    const text = annotations[PROXY_CONFIG_ANNOTATION];
    if (text === undefined) continue;
    let v: unknown;
    try {
      v = parseYaml(text);
    } catch (err) {
      throw new UsageError(`WorkloadGroup ${g.namespace}/${g.name} ${where}[${PROXY_CONFIG_ANNOTATION}]: not YAML (${errorMessage(err)})`);
    }
    if (!isRecord(v)) throw new UsageError(`WorkloadGroup ${g.namespace}/${g.name} ${where}[${PROXY_CONFIG_ANNOTATION}]: not a mapping`);
    out.push(v);
  }
  return out;
}

function meshFromText(text: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseYaml(text);
  } catch (err) {
    throw new UsageError(`${what}: not YAML (${errorMessage(err)})`);
  }
  if (v === null || v === undefined) return {};
  if (!isRecord(v)) throw new UsageError(`${what}: not a mapping`);
  return v;
}

const configMapData = (cm: Record<string, unknown> | undefined, key: string): string | undefined => {
  const data = cm?.data;
  return isRecord(data) && typeof data[key] === 'string' ? data[key] : undefined;
};

/** What only a cluster can give, as istioctl gets it. */
interface ClusterInputs {
  readonly group: WorkloadGroupInput;
  readonly mesh: Record<string, unknown>;
  readonly clusterId: string;
  readonly rootCert: string;
  readonly ingressIp?: string;
  readonly token: () => Promise<string>;
}

async function fromCluster(rest: KubeClient, o: ConfigureOpts, namespace: string, io: CliIO): Promise<ClusterInputs> {
  const rev = o.revision !== '' && o.revision !== 'default' ? `-${o.revision}` : '';
  let group: WorkloadGroupInput;
  if (o.file !== undefined) group = await groupFromFile(o.file, io, namespace);
  else {
    const got = await rest.getOrUndefined(`/apis/networking.istio.io/v1/namespaces/${namespace}/workloadgroups/${o.name!}`);
    if (!got) throw new UsageError(`workloadgroup ${o.name!} not found in namespace ${namespace}`);
    group = validGroup(got as RawObject, `k8s://${namespace}/WorkloadGroup/${o.name!}`, namespace);
  }
  const meshCm = await rest.getOrUndefined(`/api/v1/namespaces/${o.istioNamespace}/configmaps/istio${rev}`);
  if (!meshCm && o.meshConfig === undefined) throw new UsageError(`configmap istio${rev} was not found in namespace ${o.istioNamespace}`);
  const mesh =
    o.meshConfig !== undefined
      ? meshFromText(await readFile(path.resolve(io.cwd, o.meshConfig), 'utf8'), o.meshConfig)
      : meshFromText(configMapData(meshCm, 'mesh') ?? '', `configmap ${o.istioNamespace}/istio${rev} data.mesh`);
  let clusterId = o.clusterID ?? '';
  if (o.clusterID === undefined) {
    const injector = await rest.getOrUndefined(`/api/v1/namespaces/${o.istioNamespace}/configmaps/istio-sidecar-injector${rev}`);
    if (!injector)
      throw new UsageError(`failed to automatically determine the --clusterID: configmap istio-sidecar-injector${rev} not found`);
    const values = meshFromText(configMapData(injector, 'values') ?? '{}', 'the injector values');
    const mc = isRecord(values.global) && isRecord(values.global.multiCluster) ? values.global.multiCluster.clusterName : undefined;
    if (typeof mc === 'string') clusterId = mc;
  }
  const rootCm = await rest.getOrUndefined(`/api/v1/namespaces/${group.namespace}/configmaps/istio-ca-root-cert`);
  const rootCert = configMapData(rootCm, 'root-cert.pem');
  if (rootCert === undefined) throw new UsageError(`configmap istio-ca-root-cert was not found in namespace ${group.namespace}`);
  let ingressIp = o.ingressIP;
  if (!ingressIp) {
    const [svc, svcNs = o.istioNamespace] = o.ingressService.split('.');
    const s = await rest.getOrUndefined(`/api/v1/namespaces/${svcNs}/services/${svc}`).catch(() => undefined);
    const lb = isRecord(s?.status) && isRecord(s.status.loadBalancer) ? s.status.loadBalancer.ingress : undefined;
    const first = Array.isArray(lb) && isRecord(lb[0]) ? lb[0].ip : undefined;
    const external = isRecord(s?.spec) && Array.isArray(s.spec.externalIPs) ? s.spec.externalIPs[0] : undefined;
    ingressIp = typeof first === 'string' ? first : typeof external === 'string' ? external : undefined;
  }
  const sa = serviceAccountOf(group);
  const token = async (): Promise<string> => {
    const res = await rest.call('POST', `/api/v1/namespaces/${group.namespace}/serviceaccounts/${sa}/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: ['istio-ca'], expirationSeconds: Number(o.tokenDuration) },
    });
    const t = isRecord(res.status) ? res.status.token : undefined;
    if (typeof t !== 'string' || t === '')
      throw new Error(`could not create a token under service account ${sa} in namespace ${group.namespace}`);
    return t;
  };
  return { group, mesh, clusterId, rootCert, ...(ingressIp ? { ingressIp } : {}), token };
}

export function registerWorkload(program: Command, io: CliIO): void {
  const x =
    program.commands.find((c) => c.name() === 'x') ?? program.command('x').alias('experimental').description('Experimental commands');
  const workload = x
    .command('workload')
    .description('Commands to assist in configuring and deploying workloads running on VMs and other non-Kubernetes environments');
  const entry = workload.command('entry').description('Commands dealing with WorkloadEntry resources');
  entry
    .command('configure')
    .description(
      'Generates all the required configuration files for a workload instance running on a VM or non-Kubernetes environment from a WorkloadGroup',
    )
    .option('-f, --file <file>', 'filename of the WorkloadGroup artifact. Leave this field empty if using the API server')
    .option('--name <name>', 'The name of the workload group')
    .option('-o, --output <dir>', 'Output directory for generated files')
    .option('--clusterID <id>', 'The ID used to identify the cluster')
    .option('--tokenDuration <seconds>', 'The token duration in seconds', '3600')
    .option(
      '--ingressService <svc>',
      'Name of the Service to be used as the ingress gateway, in the format <service>.<namespace>',
      'istio-eastwestgateway',
    )
    .option('--ingressIP <ip>', 'IP address of the ingress gateway')
    .option('--autoregister', 'Creates a WorkloadEntry upon connection to the control plane')
    .option('--capture-dns <bool>', 'Enables the capture of outgoing DNS packets on port 53, redirecting to the agent', 'true')
    .option('--internalIP <ip>', 'Internal IP address of the workload')
    .option('--externalIP <ip>', 'External IP address of the workload')
    .option('-r, --revision <rev>', 'Control plane revision', '')
    .option(
      '--meshConfig <file>',
      'meshpilot: the mesh config (MeshConfig YAML) when there is no cluster, or instead of its istio ConfigMap',
    )
    .option('--rootCert <file>', "meshpilot: the mesh's root certificate when there is no cluster (meshpilot's --caDir/root-cert.pem)")
    .action(async (_o: ConfigureOpts, cmd: Command) => {
      const o = cmd.optsWithGlobals<ConfigureOpts>();
      const namespace = o.namespace ?? 'default';
      if (o.file === undefined && (o.name === undefined || o.namespace === undefined))
        throw new UsageError('expecting a WorkloadGroup artifact file or the name and namespace of an existing WorkloadGroup');
      if (o.output === undefined) throw new UsageError('expecting an output directory');
      if (o.internalIP && o.externalIP) throw new UsageError('the flags --internalIP and --externalIP are mutually exclusive');
      if (!/^(true|false)$/i.test(o.captureDns)) throw new UsageError(`--capture-dns: "${o.captureDns}" is not true or false`);
      if (!/^[1-9]\d*$/.test(o.tokenDuration)) throw new UsageError(`--tokenDuration: "${o.tokenDuration}" is not a number of seconds`);
      const clustered = o.kubeconfig !== undefined || o.context !== undefined || (io.env.KUBECONFIG ?? '') !== '';
      const out = path.resolve(io.cwd, o.output);
      await mkdir(out, { recursive: true });
      let inputs: ClusterInputs | undefined;
      if (clustered) {
        const { connectKube } = await import('../kube-connect.js');
        inputs = await fromCluster(connectKube(o, io), o, namespace, io);
      } else if (o.file === undefined) {
        throw new UsageError('without a cluster (-k/--kubeconfig) the WorkloadGroup must come from a file: -f workloadgroup.yaml');
      }
      const group = inputs?.group ?? (await groupFromFile(o.file!, io, namespace));
      const mesh =
        inputs?.mesh ??
        (o.meshConfig !== undefined ? meshFromText(await readFile(path.resolve(io.cwd, o.meshConfig), 'utf8'), o.meshConfig) : {});
      const files = vmFiles({
        group,
        mesh,
        proxyConfigOverrides: proxyConfigOverrides(group),
        istioNamespace: o.istioNamespace,
        clusterId: inputs?.clusterId ?? o.clusterID ?? '',
        revision: o.revision,
        autoRegister: o.autoregister === true,
        captureDns: o.captureDns.toLowerCase() === 'true',
        ...(o.internalIP ? { internalIp: o.internalIP } : {}),
        ...(o.externalIP ? { externalIp: o.externalIP } : {}),
        ...((o.ingressIP ?? inputs?.ingressIp) ? { ingressIp: (o.ingressIP ?? inputs?.ingressIp)! } : {}),
      });
      for (const [name, text] of Object.entries(files)) await writeFile(path.join(out, name), text, { mode: 0o644 });
      if (!files.hosts)
        io.stderr.write(
          `Warning: could not determine the address of istiod.${o.istioNamespace}.svc for the VM; use --ingressIP to give the gateway's address (hosts is empty)\n`,
        );
      const rootFile = path.join(out, 'root-cert.pem');
      if (inputs) await writeFile(rootFile, inputs.rootCert, { mode: 0o644 });
      else if (o.rootCert !== undefined) await copyFile(path.resolve(io.cwd, o.rootCert), rootFile);
      else
        io.stderr.write(
          'Warning: no cluster and no --rootCert: root-cert.pem was not written (meshpilot keeps it in --caDir/root-cert.pem)\n',
        );
      const tokenFile = path.join(out, 'istio-token');
      if (inputs) {
        const token = await inputs.token().catch((err: unknown) => {
          io.stderr.write(`Error: ${errorMessage(err)}\n`);
          throw new CliExit(EXIT.FAILURE);
        });
        await writeFile(tokenFile, token, { mode: 0o600 });
        await chmod(tokenFile, 0o600);
        io.stderr.write(
          `Warning: a security token for namespace "${group.namespace}" and service account "${serviceAccountOf(group)}" has been generated and stored at "${tokenFile}"\n`,
        );
      } else {
        io.stderr.write(
          'Warning: no cluster: istio-token was not written (there is no API server to issue one); give the agent a token meshpilot accepts (JWT_RULE) or a provisioned certificate (PROV_CERT)\n',
        );
      }
      io.stdout.write(`Configuration generation into directory ${o.output} was successful\n`);
    });
}
