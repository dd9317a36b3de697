/**
 * istio-agent's Wasm conversion on the ECDS responses it relays: a Wasm HTTP filter config whose VM
 * code is remote gets the module fetched into the local cache and its code rewritten to that file;
 * the `ISTIO_META_*` VM env entries (pull secret, policy, resource version) are read and dropped.
 * When the module cannot be had (unreachable, bad checksum, missing pull secret) the plugin's
 * failure policy decides: FAIL_OPEN → an RBAC filter that allows everything, otherwise one that
 * denies everything, both under the plugin's name, so Envoy never waits on a module it cannot load.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyIs, anyPack, anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import { AsyncDataSourceSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { TypedExtensionConfigSchema, type TypedExtensionConfig } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { RBACSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { WasmSchema, type Wasm } from '../../gen/envoy/extensions/filters/http/wasm/v3/wasm_pb.js';
import { FailurePolicy } from '../../gen/envoy/extensions/wasm/v3/wasm_pb.js';
import { DeltaDiscoveryResponseSchema, DiscoveryResponseSchema } from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { TypeUrl } from '../../xds/type-urls.js';
import type { WasmCache } from './cache.js';

const META_PREFIX = 'ISTIO_META_';
const PULL_SECRET = 'ISTIO_META_WASM_IMAGE_PULL_SECRET';
const PULL_POLICY = 'ISTIO_META_WASM_IMAGE_PULL_POLICY';
/** istio-agent's stat prefixes for the stand-in RBAC filters. */
export const DEFAULT_ALLOW_STAT_PREFIX = 'wasm-default-allow';
export const DEFAULT_DENY_STAT_PREFIX = 'wasm-default-deny';

function failOpen(w: Wasm): boolean {
  const p = w.config?.failurePolicy ?? FailurePolicy.UNSPECIFIED;
  return p === FailurePolicy.UNSPECIFIED ? w.config?.failOpen === true : p === FailurePolicy.FAIL_OPEN;
}

/** The RBAC config that stands in for a plugin that could not be loaded. */
export function fallbackRbac(name: string, open: boolean): TypedExtensionConfig {
  const rbac = open
    ? create(RBACSchema, { rulesStatPrefix: DEFAULT_ALLOW_STAT_PREFIX })
    : create(RBACSchema, { rules: {}, rulesStatPrefix: DEFAULT_DENY_STAT_PREFIX });
  return create(TypedExtensionConfigSchema, { name, typedConfig: anyPack(RBACSchema, rbac) });
}

/** Fetches a remote module and points the VM at the local copy; throws when it cannot. */
async function localize(w: Wasm, cache: WasmCache): Promise<void> {
  const vm = w.config?.vm.case === 'vmConfig' ? w.config.vm.value : undefined;
  const code = vm?.code?.specifier;
  if (!vm || code?.case !== 'remote') return;
  const env = vm.environmentVariables;
  const keyValues = env?.keyValues ?? {};
  const secret = keyValues[PULL_SECRET];
  if (secret === '') throw new Error(`cannot fetch Wasm module ${w.config?.name ?? ''}: missing image pulling secret`);
  const pullAlways = keyValues[PULL_POLICY] === 'Always';
  if (env) {
    for (const k of Object.keys(keyValues)) if (k.startsWith(META_PREFIX)) delete keyValues[k];
    if (Object.keys(keyValues).length === 0 && env.hostEnvKeys.length === 0) vm.environmentVariables = undefined;
  }
  const uri = code.value.httpUri?.uri;
  if (!uri) throw new Error(`Wasm remote fetch for ${w.config?.name ?? ''} has no httpUri`);
  const sha = code.value.sha256 === 'nil' ? '' : code.value.sha256;
  const file = await cache.get(uri, sha, { ...(secret ? { pullSecret: secret } : {}), pullAlways });
  vm.code = create(AsyncDataSourceSchema, { specifier: { case: 'local', value: { specifier: { case: 'filename', value: file } } } });
}

/** One ECDS resource (an Any of TypedExtensionConfig), converted; other resources come back as they are. */
export async function convertExtensionConfig(any: Any, cache: WasmCache, log: Logger): Promise<Any> {
  const ec = anyUnpack(any, TypedExtensionConfigSchema);
  if (!ec?.typedConfig || !anyIs(ec.typedConfig, WasmSchema)) return any;
  const wasm = anyUnpack(ec.typedConfig, WasmSchema);
  if (!wasm || wasm.config?.vm.case !== 'vmConfig' || wasm.config.vm.value.code?.specifier.case !== 'remote') return any;
  try {
    await localize(wasm, cache);
    ec.typedConfig = anyPack(WasmSchema, wasm);
    return anyPack(TypedExtensionConfigSchema, ec);
  } catch (err) {
    const open = failOpen(wasm);
    log.error('cannot load Wasm module; applying the fail strategy', {
      extension: ec.name,
      reason: errorMessage(err),
      filter: open ? 'allow-all RBAC (FAIL_OPEN)' : 'deny-all RBAC (FAIL_CLOSE)',
    });
    return anyPack(TypedExtensionConfigSchema, fallbackRbac(ec.name, open));
  }
}

/**
 * An ADS response as relayed bytes, converted when it carries ECDS (SotW or Delta); anything else,
 * or bytes that do not decode, pass through untouched.
 */
export async function rewriteEcdsResponse(bytes: Buffer, delta: boolean, cache: WasmCache, log: Logger): Promise<Buffer> {
  try {
    if (delta) {
      const resp = fromBinary(DeltaDiscoveryResponseSchema, bytes);
      if (resp.typeUrl !== TypeUrl.ExtensionConfiguration) return bytes;
      for (const r of resp.resources) if (r.resource) r.resource = await convertExtensionConfig(r.resource, cache, log);
      return Buffer.from(toBinary(DeltaDiscoveryResponseSchema, resp));
    }
    const resp = fromBinary(DiscoveryResponseSchema, bytes);
    if (resp.typeUrl !== TypeUrl.ExtensionConfiguration) return bytes;
    resp.resources = await Promise.all(resp.resources.map((r) => convertExtensionConfig(r, cache, log)));
    return Buffer.from(toBinary(DiscoveryResponseSchema, resp));
  } catch (err) {
    log.warn('ADS response not inspected for Wasm modules', { error: errorMessage(err) });
    return bytes;
  }
}
