import { createPrivateKey, X509Certificate } from 'node:crypto';
import { fail, ok, type Result } from '../util/result.js';

/**
 * A TLS credential as a gateway serves it. A `<name>-cacert` Secret, which holds only a CA bundle,
 * has an empty certChain and privateKey.
 */
export interface TlsCredential {
  readonly certChain: string;
  readonly privateKey: string;
  readonly caCert?: string;
  readonly crl?: string;
  readonly ocspStaple?: string;
}

/** Where gateway credentials come from: Kubernetes Secrets, or Secret objects in the config directory. */
export interface CredentialLookup {
  get(namespace: string, name: string): TlsCredential | undefined;
}

/** Key names istiod's credential controller reads: generic (`cert`/`key`/`cacert`) first, then kubernetes.io/tls. */
const GENERIC = { cert: 'cert', key: 'key', ca: 'cacert', crl: 'crl' } as const;
const TLS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt', crl: 'ca.crl', staple: 'tls.ocsp-staple' } as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `data` (base64) and `stringData` (plain, wins on a shared key, as the API server merges them). */
function secretData(doc: Record<string, unknown>, where: string): Result<Map<string, string>, string> {
  const out = new Map<string, string>();
  const errors: string[] = [];
  const data = doc.data ?? {};
  const stringData = doc.stringData ?? {};
  if (!isRecord(data)) errors.push(`${where}: data must be a map of base64 strings`);
  else {
    for (const [k, v] of Object.entries(data)) {
      const text = typeof v === 'string' ? v.replace(/\s+/g, '') : undefined;
      if (text === undefined || text.length % 4 !== 0 || !BASE64.test(text)) errors.push(`${where}: data["${k}"] is not base64`);
      else out.set(k, Buffer.from(text, 'base64').toString('utf8'));
    }
  }
  if (!isRecord(stringData)) errors.push(`${where}: stringData must be a map of strings`);
  else {
    for (const [k, v] of Object.entries(stringData)) {
      if (typeof v !== 'string') errors.push(`${where}: stringData["${k}"] must be a string`);
      else out.set(k, v);
    }
  }
  return errors.length > 0 ? fail(...errors) : ok(out);
}

function checkCertificates(pem: string, what: string): string | undefined {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) return `${what} is not a PEM certificate`;
  try {
    new X509Certificate(pem);
    return undefined;
  } catch (e) {
    return `${what} is not a valid PEM certificate: ${(e as Error).message}`;
  }
}

function checkPrivateKey(pem: string, what: string): string | undefined {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) return `${what} is not a PEM private key`;
  try {
    createPrivateKey(pem);
    return undefined;
  } catch (e) {
    return `${what} is not a valid PEM private key: ${(e as Error).message}`;
  }
}

const nonEmpty = (d: Map<string, string>, ...keys: string[]): boolean => keys.every((k) => (d.get(k) ?? '') !== '');
const present = (d: Map<string, string>, ...keys: string[]): boolean => keys.every((k) => d.has(k));

function keysFound(d: Map<string, string>): string {
  const keys = [...d.keys()].sort();
  return keys.length === 0 ? 'none' : keys.length <= 3 ? keys.join(', ') : `${keys.slice(0, 3).join(', ')}, and ${keys.length - 3} more...`;
}

/**
 * Reads a Kubernetes `Secret` (apiVersion v1) holding a gateway credential, with the keys istiod's
 * credential controller accepts: `cert`/`key` (+ `cacert`, `crl`) or `tls.crt`/`tls.key` (+ `ca.crt`,
 * `ca.crl`, `tls.ocsp-staple`); a Secret with only `cacert` or `ca.crt` is a CA bundle (the
 * `<name>-cacert` form). PEM blocks are checked to parse.
 */
export function parseKubernetesSecret(doc: unknown): Result<{ namespace: string; name: string; credential: TlsCredential }, string> {
  if (!isRecord(doc)) return fail('Secret: not an object');
  const meta = isRecord(doc.metadata) ? doc.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : '';
  const namespace = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : 'default';
  const where = `Secret ${namespace}/${name || '?'}`;
  if (doc.apiVersion !== 'v1' || doc.kind !== 'Secret')
    return fail(`${where}: expected apiVersion v1, kind Secret, got ${String(doc.apiVersion)} ${String(doc.kind)}`);
  if (name === '') return fail(`${where}: metadata.name is required`);
  const data = secretData(doc, where);
  if (!data.ok) return data;
  const d = data.value;

  let keys: { cert: string; key: string; ca: string; crl: string; staple?: string } | undefined;
  if (nonEmpty(d, GENERIC.cert, GENERIC.key)) keys = GENERIC;
  else if (nonEmpty(d, TLS.cert, TLS.key)) keys = TLS;
  const caKey = nonEmpty(d, GENERIC.ca) ? GENERIC.ca : nonEmpty(d, TLS.ca) ? TLS.ca : undefined;
  if (!keys && !caKey) {
    if (present(d, GENERIC.cert, GENERIC.key)) return fail(`${where}: found keys "cert" and "key", but they were empty`);
    if (present(d, TLS.cert, TLS.key)) return fail(`${where}: found keys "tls.crt" and "tls.key", but they were empty`);
    return fail(
      `${where}: expected keys (cert and key) or (tls.crt and tls.key), or a CA bundle (cacert or ca.crt); found: ${keysFound(d)}`,
    );
  }

  const errors: string[] = [];
  const certChain = keys ? d.get(keys.cert)! : '';
  const privateKey = keys ? d.get(keys.key)! : '';
  if (keys) {
    const ce = checkCertificates(certChain, `${where}: data["${keys.cert}"]`);
    const ke = checkPrivateKey(privateKey, `${where}: data["${keys.key}"]`);
    if (ce) errors.push(ce);
    if (ke) errors.push(ke);
  }
  const caCert = caKey ? d.get(caKey) : undefined;
  if (caKey && caCert !== undefined) {
    const e = checkCertificates(caCert, `${where}: data["${caKey}"]`);
    if (e) errors.push(e);
  }
  if (errors.length > 0) return fail(...errors);
  // The CRL sits with the CA (generic `crl` or `ca.crl`), as istiod reads it.
  const crl = d.get(caKey === TLS.ca || keys === TLS ? TLS.crl : GENERIC.crl);
  const staple = keys?.staple ? d.get(keys.staple) : undefined;
  const credential: TlsCredential = {
    certChain,
    privateKey,
    ...(caCert !== undefined ? { caCert } : {}),
    ...(crl ? { crl } : {}),
    ...(staple ? { ocspStaple: staple } : {}),
  };
  return ok({ namespace, name, credential });
}
