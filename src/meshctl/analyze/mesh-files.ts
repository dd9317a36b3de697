/**
 * istioctl analyze's --meshConfigFile and --meshNetworksFile: a MeshConfig document (checked
 * against Istio's MeshConfig proto, unknown fields and wrong types are errors) and a MeshNetworks
 * document, which analyzers read beside the objects.
 */
import { create, fromJson, type JsonValue } from '@bufbuild/protobuf';
import { parseBoundedYaml } from '../../config/index.js';
import { MeshConfigSchema, type MeshConfig } from '../../gen/mesh/v1alpha1/config_pb.js';
import { MeshError, errorMessage } from '../../util/errors.js';
import type { AnalysisObject, MeshNetworks } from './model.js';
import { parseMeshNetworks } from '../../config/index.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Under the config files' parse limits (a mesh file is read as untrusted as they are). */
function readYaml(text: string, file: string): Record<string, unknown> {
  const doc = parseBoundedYaml(text, file) ?? {};
  if (!isRecord(doc)) throw new MeshError('INVALID_ARGUMENT', `${file}: expected a mapping of fields`);
  return doc;
}

/** Istio's defaults (an empty MeshConfig for what analyzers read) when no file is given. */
export const defaultAnalysisMeshConfig = (): MeshConfig => create(MeshConfigSchema);

export function parseMeshConfigFile(text: string, file: string): MeshConfig {
  const doc = readYaml(text, file);
  for (const [k, v] of Object.entries(doc)) {
    try {
      fromJson(MeshConfigSchema, { [k]: v } as JsonValue);
    } catch (err) {
      throw new MeshError('INVALID_ARGUMENT', `${file}: field ${k}: ${errorMessage(err)}`);
    }
  }
  return fromJson(MeshConfigSchema, doc as JsonValue);
}

/**
 * The MeshNetworks document, named as istioctl names it: `MeshNetworks istio-system/meshnetworks`;
 * parsed and checked by the same code as meshpilot discovery's `--meshNetworks`.
 */
export function parseMeshNetworksFile(text: string, file: string, rootNamespace: string): AnalysisObject<MeshNetworks> {
  const { meshNetworks } = parseMeshNetworks(text, file);
  return { ref: { kind: 'MeshNetworks', namespace: rootNamespace, name: 'meshnetworks', origin: { file } }, spec: meshNetworks };
}
