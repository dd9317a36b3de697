/**
 * The Authorization header of a request, from a {@link KubeConfig}'s auth: a fixed token, a token
 * file read again once a minute (client-go's cachingTokenSource: the kubelet rotates projected
 * service account tokens), basic auth, or an exec credential plugin run when its token is missing
 * or expired (and again after a 401).
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { MeshError } from '../util/errors.js';
import type { ExecPlugin, KubeAuth } from './kubeconfig.js';

const TOKEN_FILE_TTL_MS = 60_000;
/** An exec token is renewed this long before the expiry it announces. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;
const EXEC_TIMEOUT_MS = 60_000;

interface Cached {
  readonly header: string;
  /** Epoch ms after which it is fetched again. */
  readonly until: number;
}

export class Credentials {
  #cached: Promise<Cached> | undefined;

  constructor(readonly auth: KubeAuth) {}

  /** The header value, or undefined when requests go without one (client certificate or nothing). */
  async authorization(): Promise<string | undefined> {
    const a = this.auth;
    switch (a.kind) {
      case 'none':
        return undefined;
      case 'token':
        return `Bearer ${a.token}`;
      case 'basic':
        return `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}`;
      case 'tokenFile':
        return (await this.#refreshing(() => tokenFromFile(a.file))).header;
      case 'exec':
        return (await this.#refreshing(() => tokenFromExec(a.exec))).header;
    }
  }

  /** After a 401: a token file or plugin is asked again on the next request. True when that may help. */
  invalidate(): boolean {
    if (this.auth.kind !== 'tokenFile' && this.auth.kind !== 'exec') return false;
    this.#cached = undefined;
    return true;
  }

  async #refreshing(fetch: () => Promise<Cached>): Promise<Cached> {
    const current = this.#cached && (await this.#cached.catch(() => undefined));
    if (current && Date.now() < current.until) return current;
    const next = fetch();
    this.#cached = next;
    next.catch(() => {
      if (this.#cached === next) this.#cached = undefined;
    });
    return next;
  }
}

async function tokenFromFile(file: string): Promise<Cached> {
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (err) {
    throw new MeshError('UNAUTHENTICATED', `cannot read the token file ${file}: ${(err as Error).message}`);
  }
  return { header: `Bearer ${token}`, until: Date.now() + TOKEN_FILE_TTL_MS };
}

/** Runs the plugin as kubectl does (KUBERNETES_EXEC_INFO, non-interactive) and reads its ExecCredential. */
async function tokenFromExec(plugin: ExecPlugin): Promise<Cached> {
  const info = { apiVersion: plugin.apiVersion, kind: 'ExecCredential', spec: { interactive: false } };
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      plugin.command,
      [...plugin.args],
      { env: { ...process.env, ...plugin.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) }, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1 << 20 },
      (err, out, stderr) => {
        if (err)
          reject(
            new MeshError('UNAUTHENTICATED', `${plugin.origin}: ${plugin.command} failed: ${err.message.trim()} ${stderr.trim()}`.trim()),
          );
        else resolve(out);
      },
    );
  });
  let status: { token?: unknown; expirationTimestamp?: unknown; clientCertificateData?: unknown } | undefined;
  try {
    status = (JSON.parse(stdout) as { status?: typeof status }).status;
  } catch {
    throw new MeshError('UNAUTHENTICATED', `${plugin.origin}: ${plugin.command} did not print an ExecCredential (JSON)`);
  }
  if (typeof status?.token !== 'string' || status.token === '')
    throw new MeshError(
      'UNAUTHENTICATED',
      status?.clientCertificateData !== undefined
        ? `${plugin.origin}: ${plugin.command} returned a client certificate; only tokens are supported from exec plugins`
        : `${plugin.origin}: ${plugin.command} returned no status.token`,
    );
  const expiry = typeof status.expirationTimestamp === 'string' ? Date.parse(status.expirationTimestamp) : NaN;
  return { header: `Bearer ${status.token}`, until: Number.isFinite(expiry) ? expiry - EXEC_EXPIRY_MARGIN_MS : Infinity };
}
