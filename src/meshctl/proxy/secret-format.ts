import { X509Certificate } from 'node:crypto';
import type { DumpedSecret } from './proxy-config-data.js';
import { tabwrite } from './tabwriter.js';

/** One row of istioctl's secret table (its SecretItem). */
export interface SecretItem {
  readonly name: string;
  readonly type: string;
  readonly state: string;
  readonly valid: boolean;
  readonly serialNumber: string;
  readonly notAfter: string;
  readonly notBefore: string;
  readonly trustDomain: string;
}

/** Go's RFC3339 for a UTC time: no fractional seconds. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function itemOf(name: string, state: string, pem: string, trustDomain: string, now: Date): SecretItem {
  const empty = { name, state, type: '', valid: false, serialNumber: '', notAfter: '', notBefore: '', trustDomain };
  if (pem === '') return empty;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    return empty;
  }
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  const spiffe = (cert.subjectAltName ?? '').split(', ').find((s) => s.startsWith('URI:spiffe://'));
  return {
    name,
    state,
    type: cert.ca ? 'CA' : 'Cert Chain',
    valid: now > notBefore && now < notAfter,
    // Go prints the serial with %032x: lower-case, zero-padded to 32 digits.
    serialNumber: cert.serialNumber
      .toLowerCase()
      .replace(/^0+(?=.)/, '')
      .padStart(32, '0'),
    notAfter: rfc3339(notAfter),
    notBefore: rfc3339(notBefore),
    trustDomain: trustDomain || (spiffe ? new URL(spiffe.slice(4)).host : ''),
  };
}

/** istioctl's GetEnvoySecrets: warming then active secrets, each read from its cert chain, else its trusted CA. */
export function secretItems(secrets: readonly DumpedSecret[], now = new Date()): SecretItem[] {
  const dec = new TextDecoder();
  const inline = (ds: { specifier: { case: string | undefined; value?: unknown } } | undefined): string =>
    ds?.specifier.case === 'inlineBytes'
      ? dec.decode(ds.specifier.value as Uint8Array)
      : ds?.specifier.case === 'inlineString'
        ? (ds.specifier.value as string)
        : '';
  const ordered = [...secrets.filter((s) => s.state === 'WARMING'), ...secrets.filter((s) => s.state !== 'WARMING')];
  return ordered.flatMap(({ secret, state }) => {
    const chain = secret.type.case === 'tlsCertificate' ? inline(secret.type.value.certificateChain) : '';
    const vc = secret.type.case === 'validationContext' ? secret.type.value : undefined;
    const ca = inline(vc?.trustedCa);
    if (chain !== '') return [itemOf(secret.name, state, chain, '', now)];
    // SPIFFE trust-bundle validators (one row per trust domain in istioctl) are not decoded: no generated schema.
    return [itemOf(secret.name, state, ca, '', now)];
  });
}

/**
 * `istioctl proxy-config secret`: RESOURCE NAME, TYPE, STATUS, VALID CERT, SERIAL NUMBER,
 * NOT AFTER, NOT BEFORE (+ TRUST DOMAIN when every item has one). Go's tabwriter padding 5.
 */
export function formatSecrets(secrets: readonly DumpedSecret[] | undefined, now = new Date(), withName = false): string {
  if (!secrets || secrets.length === 0) return 'No active or warming secrets found.\n';
  const items = secretItems(secrets, now);
  if (items.length === 0) return 'No secret items to show.\n';
  const withTd = items.every((i) => i.trustDomain !== '');
  const header = [
    'RESOURCE NAME',
    'TYPE',
    'STATUS',
    'VALID CERT',
    'SERIAL NUMBER',
    'NOT AFTER',
    'NOT BEFORE',
    ...(withTd ? ['TRUST DOMAIN'] : []),
  ];
  const rows = items.map((s) => [
    withName ? `secret/${s.name}` : s.name,
    s.type,
    s.state,
    String(s.valid),
    s.serialNumber,
    s.notAfter,
    s.notBefore,
    ...(withTd ? [s.trustDomain] : []),
  ]);
  return tabwrite([header, ...rows], 5);
}
