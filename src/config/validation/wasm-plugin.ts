/** istiod's ValidateWasmPlugin (pkg/config/validation): url scheme, sha256, names, VM env, match ports. */
import { EnvValueSource, type WasmPlugin } from '../../gen/extensions/v1alpha1/wasm_pb.js';
import type { ObjectContext } from './context.js';
import { field, index, type Issues } from './issues.js';
import { checkSelectorAndTargets } from './security-targets.js';

const URL_SCHEMES = new Set(['', 'file', 'http', 'https', 'oci']);

/** The scheme of a plugin URL as istiod reads it: a URL without one (`registry/image:tag`) is OCI. */
export function wasmUrlScheme(url: string): string | undefined {
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(url);
  if (m) return m[1]?.toLowerCase();
  try {
    new URL(`http://${url}`);
    return '';
  } catch {
    return undefined;
  }
}

export function validateWasmPlugin(spec: WasmPlugin, _ctx: ObjectContext, issues: Issues): void {
  checkSelectorAndTargets(issues, 'spec', spec);
  const url = field('spec', 'url');
  if (spec.url === '') issues.add(url, 'url field needs to be set');
  else {
    const scheme = wasmUrlScheme(spec.url);
    if (scheme === undefined) issues.add(url, `failed to parse url: ${JSON.stringify(spec.url)}`);
    else if (!URL_SCHEMES.has(scheme)) issues.add(url, `url contains unsupported scheme: ${scheme}`);
  }
  if (spec.sha256 !== '' && !/^[a-f0-9]{64}$/.test(spec.sha256))
    issues.add(field('spec', 'sha256'), 'sha256 field must match [a-f0-9]{64} pattern');
  if (spec.imagePullSecret.length > 253)
    issues.add(field('spec', 'imagePullSecret'), 'imagePullSecret field must be less than 253 characters long');
  if (spec.pluginName.length > 256) issues.add(field('spec', 'pluginName'), 'pluginName field must be less than 255 characters long');
  const seen = new Set<string>();
  spec.vmConfig?.env.forEach((e, i) => {
    const at = index(field(field('spec', 'vmConfig'), 'env'), i);
    if (e.name === '') issues.add(field(at, 'name'), 'env name must be set');
    else if (e.name.length > 256) issues.add(field(at, 'name'), 'env.name field must be less than 255 characters long');
    else if (seen.has(e.name)) issues.add(field(at, 'name'), `duplicate env ${JSON.stringify(e.name)}`);
    seen.add(e.name);
    if (e.valueFrom !== EnvValueSource.INLINE && e.value !== '')
      issues.add(field(at, 'value'), 'value may only be set when valueFrom is INLINE');
  });
  spec.match.forEach((m, i) =>
    m.ports.forEach((p, j) => {
      if (p.number <= 0 || p.number > 65535)
        issues.add(
          field(index(field(index(field('spec', 'match'), i), 'ports'), j), 'number'),
          `port ${p.number} is out of range [1, 65535]`,
        );
    }),
  );
}
