import { toJson } from '@bufbuild/protobuf';
import { StructSchema } from '@bufbuild/protobuf/wkt';
import type { ConfigSnapshot } from '../../config/index.js';
import type { Logger } from '../../util/log.js';
import { parseKubernetesSecret, type CredentialLookup, type TlsCredential } from '../../model/index.js';

/**
 * Gateway credentials from the Secret objects of a config snapshot (directory mode: the files
 * stand in for the cluster's Secrets). Secrets that hold no usable TLS credential are skipped and
 * logged once per snapshot; a Secret may legitimately hold something else, so that is not a config error.
 */
export function configCredentials(config: ConfigSnapshot, logger: Logger): CredentialLookup {
  const byRef = new Map<string, TlsCredential>();
  for (const s of config.byKind('Secret').values()) {
    const doc = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: s.meta.name, namespace: s.meta.namespace },
      ...(toJson(StructSchema, s.spec) as object),
    };
    const parsed = parseKubernetesSecret(doc);
    if (parsed.ok) byRef.set(`${parsed.value.namespace}/${parsed.value.name}`, parsed.value.credential);
    else logger.debug('secret is not a TLS credential', { secret: `${s.meta.namespace}/${s.meta.name}`, reason: parsed.errors.join('; ') });
  }
  return { get: (namespace, name) => byRef.get(`${namespace}/${name}`) };
}
