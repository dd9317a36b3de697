import { MeshError } from '../../util/errors.js';

/**
 * The CNI network config as install-cni edits it: the first config file by name is the primary
 * network; our entry is appended to its `plugins` (a single-plugin `.conf` becomes a `.conflist`
 * holding it). Entries other than ours are written back as parsed, so their JSON is unchanged.
 */

export const PLUGIN_TYPE = 'meshpilot-cni';
const CONFIG_EXTENSIONS = ['.conflist', '.conf', '.json'];

/** The primary network's file among `names` (install-cni: CNI_CONF_NAME, else the first by name). */
export function primaryConfigName(names: readonly string[], confName?: string): string | undefined {
  if (confName !== undefined && confName !== '') {
    if (names.includes(confName)) return confName;
    // A .conf named by the user that we already converted lives on as .conflist.
    const converted = confName.endsWith('.conf') ? `${confName}list` : undefined;
    return converted !== undefined && names.includes(converted) ? converted : undefined;
  }
  return [...names].sort().find((n) => CONFIG_EXTENSIONS.some((e) => n.endsWith(e)));
}

type Json = Record<string, unknown>;

function parseObject(text: string, file: string): Json {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `CNI config ${file} is not JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new MeshError('INVALID_ARGUMENT', `CNI config ${file} must be a JSON object`);
  return doc as Json;
}

/** The config as a conflist: a `.conf`'s plugin becomes the only entry of `plugins`. */
function asConflist(doc: Json, file: string): Json & { plugins: Json[] } {
  if (doc.plugins !== undefined) {
    if (!Array.isArray(doc.plugins) || doc.plugins.some((p) => typeof p !== 'object' || p === null || Array.isArray(p))) {
      throw new MeshError('INVALID_ARGUMENT', `CNI config ${file}: plugins must be a list of objects`);
    }
    return doc as Json & { plugins: Json[] };
  }
  if (typeof doc.type !== 'string') throw new MeshError('INVALID_ARGUMENT', `CNI config ${file} has neither plugins nor a type`);
  const { cniVersion, name, ...plugin } = doc;
  return { cniVersion, name, plugins: [plugin] };
}

export function hasPlugin(text: string, file: string): boolean {
  const doc = parseObject(text, file);
  return Array.isArray(doc.plugins) && doc.plugins.some((p: unknown) => (p as Json | null)?.type === PLUGIN_TYPE);
}

/** The conflist text with exactly one entry of ours, last (it needs the primary's prevResult). */
export function withPlugin(text: string, file: string, entry: Json): string {
  const doc = asConflist(parseObject(text, file), file);
  const plugins = doc.plugins.filter((p) => p.type !== PLUGIN_TYPE);
  return `${JSON.stringify({ ...doc, plugins: [...plugins, entry] }, null, 2)}\n`;
}

/** The conflist without our entries (other entries untouched). */
export function withoutPlugin(text: string, file: string): string {
  const doc = asConflist(parseObject(text, file), file);
  return `${JSON.stringify({ ...doc, plugins: doc.plugins.filter((p) => p.type !== PLUGIN_TYPE) }, null, 2)}\n`;
}
