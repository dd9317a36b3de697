/**
 * ECDS (`envoy.config.core.v3.TypedExtensionConfig`): the extension configs an HCM names in its
 * `config_discovery` filters, by the names the proxy subscribes to (istiod's EcdsGenerator; never
 * wildcard). Sources answer in order — EnvoyFilter EXTENSION_CONFIG patches come first in istiod.
 */
import { toBinary } from '@bufbuild/protobuf';
import { TypedExtensionConfigSchema, type TypedExtensionConfig } from '../../gen/envoy/config/core/v3/extension_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import { type Generator, makeResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { wasmExtensionConfigs, wasmSource } from './wasm-plugins.js';

/** Extension configs among `names` for `proxy`. */
export type EcdsSource = (push: PushContext, proxy: Proxy, names: readonly string[]) => readonly TypedExtensionConfig[];

export const wasmEcdsSource: EcdsSource = (push, proxy, names) => wasmExtensionConfigs(wasmSource(push), proxy, names);

export function ecdsGenerator(sources: readonly EcdsSource[]): Generator {
  return {
    generate(proxy, watched, push) {
      const names = [...watched.names].sort();
      if (names.length === 0) return [];
      const seen = new Set<string>();
      const out = [];
      for (const source of sources) {
        for (const ec of source(push, proxy, names)) {
          if (seen.has(ec.name)) continue;
          seen.add(ec.name);
          out.push(makeResource(ec.name, TypeUrl.ExtensionConfiguration, toBinary(TypedExtensionConfigSchema, ec)));
        }
      }
      return out;
    },
  };
}
