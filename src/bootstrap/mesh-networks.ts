/**
 * The network settings of `meshpilot discovery`, as istiod's initMeshNetworks reads them: the
 * `--meshNetworks` file when given (watched), else the `meshNetworks` key of the mesh ConfigMap (with
 * a cluster), else none; plus the system namespace's `topology.istio.io/network` label. A change that
 * parses is handed on (DiscoveryServer.setNetworks: a full push); one that does not is logged with its
 * line and field, and the last good networks stay in force. A bad file at start-up stops the start.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { EMPTY_MESH_NETWORKS, parseMeshNetworks, type MeshNetworks } from '../config/index.js';
import type { NetworkSettings } from '../model/index.js';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';

/** What a cluster tells about networks (src/bootstrap/mesh-networks-kube.ts). */
export interface ClusterNetworkSource {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The `meshNetworks` key of the mesh ConfigMap ('' when there is none). */
  meshNetworksText(): string;
  /** Where that text comes from, for messages. */
  readonly origin: string;
  systemNamespaceNetwork(): string;
  /** Called after a batch that may have changed either. */
  onChange(fn: () => void): void;
}

export interface NetworkWatchOptions {
  /** --meshNetworks. */
  readonly file: string | undefined;
  readonly cluster: ClusterNetworkSource | undefined;
  readonly clusterId: string;
  /** The Kubernetes registry runs (the network fallbacks apply). */
  readonly kubernetes: boolean;
  /** PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API (default true). */
  readonly gatewayApi?: boolean;
  readonly logger: Logger;
  /** How long file events settle before a reload (ms). */
  readonly settleMs?: number;
}

export class NetworkWatch {
  readonly #opts: NetworkWatchOptions;
  readonly #listeners = new Set<(s: NetworkSettings) => void>();
  #meshNetworks: MeshNetworks = EMPTY_MESH_NETWORKS;
  #lastText: string | undefined;
  #current: NetworkSettings;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: NetworkWatchOptions) {
    this.#opts = opts;
    this.#current = this.#settings();
  }

  /** Reads the file or the cluster's state; throws on a bad `--meshNetworks` file. */
  async start(): Promise<NetworkSettings> {
    const { file, cluster } = this.#opts;
    if (file !== undefined) {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        throw new MeshError('INVALID_ARGUMENT', `--meshNetworks ${file}: ${errorMessage(err)}`);
      }
      this.#apply(text, `--meshNetworks ${file}`, true);
      // The directory, not the file: a ConfigMap volume or an editor replaces the file.
      this.#watcher = watch(path.dirname(path.resolve(file)), (_event, name) => {
        if (name !== null && name !== path.basename(file) && !name.startsWith('..')) return;
        clearTimeout(this.#timer);
        this.#timer = setTimeout(() => void this.#reloadFile(), this.#opts.settleMs ?? 100);
      });
    }
    if (cluster) {
      await cluster.start();
      if (file === undefined) this.#apply(cluster.meshNetworksText(), cluster.origin, true);
      cluster.onChange(() => {
        if (file === undefined) this.#apply(cluster.meshNetworksText(), cluster.origin, false);
        this.#publish();
      });
    }
    this.#current = this.#settings();
    return this.#current;
  }

  async stop(): Promise<void> {
    this.#watcher?.close();
    clearTimeout(this.#timer);
    await this.#opts.cluster?.stop();
  }

  current(): NetworkSettings {
    return this.#current;
  }

  onChange(fn: (s: NetworkSettings) => void): () => void {
    const entry = (s: NetworkSettings): void => fn(s);
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  async #reloadFile(): Promise<void> {
    const file = this.#opts.file!;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      this.#opts.logger.error('cannot read mesh networks; keeping the previous ones', { file, error: errorMessage(err) });
      return;
    }
    this.#apply(text, `--meshNetworks ${file}`, false);
    this.#publish();
  }

  /** Parses a new text; at start-up an error is thrown for a file, afterwards it is logged and ignored. */
  #apply(text: string, origin: string, initial: boolean): void {
    if (text === this.#lastText) return;
    try {
      const parsed = parseMeshNetworks(text, origin);
      for (const w of parsed.warnings) this.#opts.logger.warn('mesh networks: field ignored', { warning: w });
      this.#meshNetworks = parsed.meshNetworks;
      this.#lastText = text;
      this.#opts.logger.info('mesh networks loaded', { from: origin, networks: Object.keys(parsed.meshNetworks.networks) });
    } catch (err) {
      if (initial && this.#opts.file !== undefined) throw err;
      this.#opts.logger.error('invalid mesh networks; keeping the previous ones', { error: errorMessage(err) });
    }
  }

  #settings(): NetworkSettings {
    return {
      meshNetworks: this.#meshNetworks,
      systemNamespaceNetwork: this.#opts.cluster?.systemNamespaceNetwork() ?? '',
      clusterId: this.#opts.clusterId,
      kubernetes: this.#opts.kubernetes,
      ...(this.#opts.gatewayApi === false ? { gatewayApi: false } : {}),
    };
  }

  #publish(): void {
    const next = this.#settings();
    const prev = this.#current;
    if (next.meshNetworks === prev.meshNetworks && next.systemNamespaceNetwork === prev.systemNamespaceNetwork) return;
    if (next.systemNamespaceNetwork !== prev.systemNamespaceNetwork)
      this.#opts.logger.info('system namespace network changed', { network: next.systemNamespaceNetwork });
    this.#current = next;
    for (const fn of [...this.#listeners]) fn(next);
  }
}
