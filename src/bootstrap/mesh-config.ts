/** The mesh config `meshpilot discovery` starts with (file, cluster ConfigMap or defaults). */
import { readFile } from 'node:fs/promises';
import type { MeshConfigMap } from './mesh-configmap.js';
import { parseMeshConfig, type MeshConfigFile } from '../config/index.js';
import { MeshError, errorMessage } from '../util/errors.js';
import type { DiscoveryOptions } from './options.js';

/** The mesh config at start-up: --meshConfig wins; then the cluster's ConfigMap; then istiod's defaults. */
export async function loadMeshConfig(opts: DiscoveryOptions, configMap: MeshConfigMap | undefined): Promise<MeshConfigFile> {
  if (opts.meshConfigFile !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.meshConfigFile, 'utf8');
    } catch (err) {
      throw new MeshError('INVALID_ARGUMENT', `--meshConfig ${opts.meshConfigFile}: ${errorMessage(err)}`);
    }
    return parseMeshConfig(text, `--meshConfig ${opts.meshConfigFile}`, opts.domain);
  }
  if (configMap) {
    await configMap.start();
    return configMap.current();
  }
  return parseMeshConfig('', 'defaults', opts.domain);
}
