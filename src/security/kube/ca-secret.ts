/**
 * istiod's `istio-ca-secret`: replicas on a cluster share the self-signed root through a Secret in
 * their namespace, so every replica signs with the same key and workloads of different replicas
 * trust each other. Before the CA starts: if the Secret exists, its root and key become the CA
 * directory's state (a fresh replica, or one restarted on another node); if not, this replica
 * creates the root (or uses the one its directory holds) and publishes it — and when another
 * replica won that race (409), takes theirs instead. Plug-in certs (cacerts) bypass all of this.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { kubeClient, statusCodeOf, type KubeConfig } from '../../kube/index.js';
import type { Logger } from '../../util/log.js';
import { CA_CERT_FILE, CA_KEY_FILE, readOptional, ROOT_CERT_FILE, writePrivate, writePublic } from '../ca/files.js';
import { loadOrCreateSelfSigned, STAGED_ROTATION_FILES, type SelfSignedOptions } from '../ca/self-signed.js';
import { MeshError } from '../../util/errors.js';

export const CA_SECRET = 'istio-ca-secret';
/** The Secret type istiod gives it. */
export const CA_SECRET_TYPE = 'istio.io/ca-root';

export interface CaSecretOptions {
  readonly kubeConfig: KubeConfig;
  /** istiod's namespace (POD_NAMESPACE). */
  readonly namespace: string;
  /** How to create a root when neither the Secret nor the directory has one. */
  readonly selfSigned: SelfSignedOptions;
  readonly logger: Logger;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string | undefined): string | undefined => (s === undefined ? undefined : Buffer.from(s, 'base64').toString('utf8'));

/**
 * Makes the CA directory hold the mesh's shared root; says whether it was loaded from or published
 * to the Secret, or kept local because the namespace does not exist.
 */
export async function syncCaSecret(opts: CaSecretOptions): Promise<'loaded' | 'published' | 'local'> {
  const core = kubeClient(opts.kubeConfig);
  const secrets = `/api/v1/namespaces/${encodeURIComponent(opts.namespace)}/secrets`;
  const dir = opts.selfSigned.dir;
  const where = `Secret ${opts.namespace}/${CA_SECRET}`;
  const load = async (secret: V1Secret): Promise<'loaded'> => {
    const cert = unb64(secret.data?.[CA_CERT_FILE]);
    const key = unb64(secret.data?.[CA_KEY_FILE]);
    if (cert === undefined || key === undefined)
      throw new MeshError(
        'FAILED_PRECONDITION',
        `${where} has no ${CA_CERT_FILE} / ${CA_KEY_FILE}: refusing to start with a root the other replicas do not have`,
      );
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writePrivate(path.join(dir, CA_KEY_FILE), key);
    await writePublic(path.join(dir, CA_CERT_FILE), cert);
    await writePublic(path.join(dir, ROOT_CERT_FILE), unb64(secret.data?.[ROOT_CERT_FILE]) ?? cert);
    await Promise.all(STAGED_ROTATION_FILES.map((f) => rm(path.join(dir, f), { force: true })));
    opts.logger.info('CA: using the mesh root shared by the replicas', { secret: where });
    return 'loaded';
  };
  const read = async (): Promise<V1Secret | undefined> => {
    try {
      return await core.get<V1Secret>(`${secrets}/${CA_SECRET}`);
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw new MeshError(
        statusCodeOf(err) === 403 ? 'PERMISSION_DENIED' : 'UNAVAILABLE',
        `reading ${where}: ${statusCodeOf(err) === 403 ? 'forbidden (the ServiceAccount needs get and create on secrets in its namespace)' : String(err)}`,
        { cause: err },
      );
    }
  };
  const existing = await read();
  if (existing) return load(existing);
  await loadOrCreateSelfSigned(opts.selfSigned);
  const file = async (f: string): Promise<string> => (await readOptional(path.join(dir, f))) ?? '';
  const body: V1Secret = {
    metadata: { name: CA_SECRET, namespace: opts.namespace },
    type: CA_SECRET_TYPE,
    data: {
      [CA_CERT_FILE]: b64(await file(CA_CERT_FILE)),
      [CA_KEY_FILE]: b64(await file(CA_KEY_FILE)),
      [ROOT_CERT_FILE]: b64(await file(ROOT_CERT_FILE)),
    },
  };
  try {
    await core.create(secrets, body);
    opts.logger.info('CA: published the mesh root for the other replicas', { secret: where });
    return 'published';
  } catch (err) {
    if (statusCodeOf(err) === 404) {
      // No such namespace (meshpilot run against a cluster from outside it): nothing to share with.
      opts.logger.warn(
        'CA: the namespace for the shared root does not exist; this replica keeps its own root (other replicas would not trust it)',
        { secret: where },
      );
      return 'local';
    }
    if (statusCodeOf(err) !== 409)
      throw new MeshError(
        statusCodeOf(err) === 403 ? 'PERMISSION_DENIED' : 'UNAVAILABLE',
        `creating ${where}: ${statusCodeOf(err) === 403 ? 'forbidden (the ServiceAccount needs get and create on secrets in its namespace)' : String(err)}`,
        { cause: err },
      );
    // Another replica published first: theirs is the mesh's root.
    const winner = await read();
    if (!winner) throw new MeshError('ABORTED', `${where} was created by another replica and is gone again`, { cause: err });
    return load(winner);
  }
}
