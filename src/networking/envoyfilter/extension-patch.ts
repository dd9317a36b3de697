import { type Bootstrap, BootstrapSchema } from '../../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { TypedExtensionConfigSchema, type TypedExtensionConfig } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { mergeValue, patchesOf, valueOf, type PatchRun } from './listener-patch.js';
import { ApplyTo, Op } from '../../model/index.js';

/**
 * istiod's InsertedExtensionConfigurations: the EXTENSION_CONFIG ADDs whose name is among the
 * ECDS names a proxy asked for. (meshpilot serves no ECDS yet; the function is the seam for it.)
 */
export function insertedExtensionConfigs(run: PatchRun, names: readonly string[]): TypedExtensionConfig[] {
  const wanted = new Set(names);
  const out: TypedExtensionConfig[] = [];
  for (const p of patchesOf(run, ApplyTo.EXTENSION_CONFIG)) {
    if (p.operation !== Op.ADD) continue;
    const ec = valueOf(TypedExtensionConfigSchema, p);
    if (!wanted.has(ec.name)) continue;
    run.touched.add(p.key);
    out.push(ec);
  }
  return out;
}

/** BOOTSTRAP MERGE patches (istiod applies them where it renders a bootstrap), in order. */
export function patchBootstrap(run: PatchRun, b: Bootstrap): void {
  for (const p of patchesOf(run, ApplyTo.BOOTSTRAP)) {
    if (p.operation !== Op.MERGE && p.operation !== Op.MERGE_AND_REPLACE_LIST) continue;
    run.touched.add(p.key);
    mergeValue(BootstrapSchema, b, p);
  }
}
