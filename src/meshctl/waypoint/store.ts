/**
 * Where `meshctl waypoint` reads and writes Gateways: the cluster (as istioctl), or a meshpilot
 * config directory (`--configDir`, meshctl's own, for meshpilot run from files).
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeApiError, type KubeClient } from '../../kube/index.js';
import { MeshError, errorMessage } from '../../util/errors.js';
import { UsageError } from '../io.js';
import { waypointYaml, type WaypointGateway } from './gateway.js';

export interface Condition {
  readonly type?: string;
  readonly status?: string;
  readonly reason?: string;
  readonly message?: string;
}

/** A Gateway as read back: what list/status/delete look at. */
export interface StoredGateway {
  readonly metadata: { name: string; namespace: string; labels?: Record<string, string> };
  readonly spec?: { gatewayClassName?: string };
  readonly status?: { conditions?: readonly Condition[] };
}

export interface WaypointStore {
  /** Every Gateway (of any class) of `namespace`, or of all namespaces when undefined. */
  list(namespace: string | undefined, labelSelector?: string): Promise<StoredGateway[]>;
  get(namespace: string, name: string): Promise<StoredGateway | undefined>;
  apply(gw: WaypointGateway & { metadata: { namespace: string } }): Promise<void>;
  /** False when there was nothing to delete. */
  delete(namespace: string, name: string): Promise<boolean>;
  /** The namespace's labels; throws `namespace: NS not found` when it does not exist. */
  namespaceLabels(namespace: string): Promise<Record<string, string>>;
  setNamespaceLabel(namespace: string, key: string, value: string): Promise<void>;
}

const GATEWAYS = '/apis/gateway.networking.k8s.io/v1';
const gatewaysPath = (ns: string | undefined): string =>
  ns === undefined ? `${GATEWAYS}/gateways` : `${GATEWAYS}/namespaces/${encodeURIComponent(ns)}/gateways`;
const namespacePath = (ns: string): string => `/api/v1/namespaces/${encodeURIComponent(ns)}`;

/** The field manager of meshctl's server-side applies (as `meshctl install`). */
const FIELD_MANAGER = 'meshctl';

export class KubeWaypointStore implements WaypointStore {
  constructor(private readonly rest: KubeClient) {}

  async list(namespace: string | undefined, labelSelector?: string): Promise<StoredGateway[]> {
    const q = labelSelector ? `?${new URLSearchParams({ labelSelector }).toString()}` : '';
    const r = (await this.rest.call('GET', gatewaysPath(namespace) + q)) as { items?: StoredGateway[] };
    return r.items ?? [];
  }

  async get(namespace: string, name: string): Promise<StoredGateway | undefined> {
    return (await this.rest.getOrUndefined(`${gatewaysPath(namespace)}/${encodeURIComponent(name)}`)) as StoredGateway | undefined;
  }

  async apply(gw: WaypointGateway & { metadata: { namespace: string } }): Promise<void> {
    const p = `${gatewaysPath(gw.metadata.namespace)}/${encodeURIComponent(gw.metadata.name)}?fieldManager=${FIELD_MANAGER}`;
    try {
      await this.rest.call('PATCH', p, gw, 'application/apply-patch+yaml');
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404)
        throw new MeshError(
          'FAILED_PRECONDITION',
          `missing Kubernetes Gateway CRDs need to be installed before applying a waypoint: ${err.message}`,
        );
      throw err;
    }
  }

  async delete(namespace: string, name: string): Promise<boolean> {
    try {
      await this.rest.call('DELETE', `${gatewaysPath(namespace)}/${encodeURIComponent(name)}`);
      return true;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return false;
      throw err;
    }
  }

  async namespaceLabels(namespace: string): Promise<Record<string, string>> {
    let ns: { metadata?: { labels?: Record<string, string> } } | undefined;
    try {
      ns = await this.rest.getOrUndefined(namespacePath(namespace));
    } catch (err) {
      throw new MeshError('UNAVAILABLE', `failed to get namespace ${namespace}: ${errorMessage(err)}`);
    }
    if (!ns) throw new MeshError('NOT_FOUND', `namespace: ${namespace} not found`);
    return ns.metadata?.labels ?? {};
  }

  async setNamespaceLabel(namespace: string, key: string, value: string): Promise<void> {
    try {
      await this.rest.call('PATCH', namespacePath(namespace), { metadata: { labels: { [key]: value } } }, 'application/merge-patch+json');
    } catch (err) {
      throw new MeshError('UNAVAILABLE', `failed to update namespace ${namespace}: ${errorMessage(err)}`);
    }
  }
}

/** The file `apply --configDir` writes a waypoint to. */
export const waypointFile = (namespace: string, name: string): string => `waypoint-${namespace}-${name}.yaml`;

interface FoundGateway {
  readonly file: string;
  readonly documents: number;
  readonly gateway: StoredGateway;
}

/**
 * A meshpilot config directory: apply writes one file per waypoint (waypoint-NS-NAME.yaml), list
 * reads every Gateway of the directory's YAML files (as the file source does, recursively), delete
 * removes a waypoint's file when the Gateway is alone in it. Namespaces are not config-directory
 * objects (meshpilot's file source reads Istio and Gateway API kinds only), so namespace labels
 * need a cluster.
 */
export class DirWaypointStore implements WaypointStore {
  constructor(private readonly dir: string) {}

  private async files(dir = this.dir): Promise<string[]> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw new MeshError('NOT_FOUND', `cannot read the config directory ${dir}: ${errorMessage(err)}`);
    }
    const out: string[] = [];
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && !e.name.startsWith('.')) out.push(...(await this.files(p)));
      else if (e.isFile() && /\.(ya?ml|json)$/.test(e.name)) out.push(p);
    }
    return out;
  }

  private async gateways(): Promise<FoundGateway[]> {
    const found: FoundGateway[] = [];
    for (const file of await this.files()) {
      const docs = parseAllDocuments(await readFile(file, 'utf8'));
      const all = (Array.isArray(docs) ? docs : [docs]).map((d) => d.toJS() as unknown).filter((d) => d !== null && d !== undefined);
      for (const d of all) {
        const o = d as {
          kind?: string;
          apiVersion?: string;
          metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
        };
        if (o.kind !== 'Gateway' || !String(o.apiVersion ?? '').startsWith('gateway.networking.k8s.io/')) continue;
        const g = d as StoredGateway;
        found.push({
          file,
          documents: all.length,
          gateway: { ...g, metadata: { ...g.metadata, namespace: o.metadata?.namespace ?? 'default' } },
        });
      }
    }
    return found;
  }

  async list(namespace: string | undefined, labelSelector?: string): Promise<StoredGateway[]> {
    const rev = labelSelector?.split('=');
    return (await this.gateways())
      .map((f) => f.gateway)
      .filter((g) => namespace === undefined || g.metadata.namespace === namespace)
      .filter((g) => !rev || g.metadata.labels?.[rev[0]!] === rev[1]);
  }

  async get(namespace: string, name: string): Promise<StoredGateway | undefined> {
    return (await this.gateways()).find((f) => f.gateway.metadata.namespace === namespace && f.gateway.metadata.name === name)?.gateway;
  }

  async apply(gw: WaypointGateway & { metadata: { namespace: string } }): Promise<void> {
    const elsewhere = (await this.gateways()).find(
      (f) =>
        f.gateway.metadata.namespace === gw.metadata.namespace &&
        f.gateway.metadata.name === gw.metadata.name &&
        path.basename(f.file) !== waypointFile(gw.metadata.namespace, gw.metadata.name),
    );
    if (elsewhere)
      throw new MeshError('ALREADY_EXISTS', `Gateway ${gw.metadata.namespace}/${gw.metadata.name} is already defined in ${elsewhere.file}`);
    await mkdir(this.dir, { recursive: true });
    await writeFile(path.join(this.dir, waypointFile(gw.metadata.namespace, gw.metadata.name)), waypointYaml(gw));
  }

  async delete(namespace: string, name: string): Promise<boolean> {
    const f = (await this.gateways()).find((x) => x.gateway.metadata.namespace === namespace && x.gateway.metadata.name === name);
    if (!f) return false;
    if (f.documents > 1)
      throw new MeshError(
        'FAILED_PRECONDITION',
        `Gateway ${namespace}/${name} shares ${f.file} with other objects: remove it from that file by hand`,
      );
    await rm(f.file);
    return true;
  }

  namespaceLabels(): Promise<Record<string, string>> {
    return Promise.resolve({});
  }

  setNamespaceLabel(): Promise<void> {
    return Promise.reject(
      new UsageError(
        `--enroll-namespace needs a cluster: namespaces are not read from a config directory; label the WorkloadEntries and ServiceEntries istio.io/use-waypoint instead`,
      ),
    );
  }
}
