import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * Test-only certificates minted with the openssl CLI: a self-signed root and SPIFFE workload
 * leaves signed by it, written as Istio's agent writes them for proxyless gRPC (cert-chain.pem,
 * key.pem, root-cert.pem in one directory). Independent of meshpilot's own CA on purpose. Keys
 * are written to files only and never returned or logged.
 */

const run = promisify(execFile);

async function openssl(args: readonly string[]): Promise<void> {
  try {
    await run('openssl', args, { timeout: 20_000 });
  } catch (err) {
    // stderr of `openssl req`/`x509` carries no key material, only the failure.
    const e = err as { stderr?: string; message: string };
    throw new Error(`openssl ${args[0] ?? ''} failed: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

const P256 = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface TestCa {
  readonly name: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** A self-signed ECDSA P-256 root (CA:TRUE, keyCertSign) in `dir/<name>/`, valid for two days. */
export async function createTestCa(dir: string, name = 'root'): Promise<TestCa> {
  const d = join(dir, name);
  await mkdir(d, { recursive: true, mode: 0o700 });
  const ca: TestCa = { name, certFile: join(d, 'ca-cert.pem'), keyFile: join(d, 'ca-key.pem') };
  await openssl([
    'req',
    '-x509',
    ...P256,
    '-keyout',
    ca.keyFile,
    '-out',
    ca.certFile,
    '-days',
    '2',
    '-subj',
    `/O=meshpilot-test/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return ca;
}

/** `spiffe://<trustDomain>/ns/<ns>/sa/<sa>` */
export function spiffeId(namespace: string, serviceAccount: string, trustDomain = 'cluster.local'): string {
  return `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

export interface WorkloadCerts {
  /** The directory holding the three files (a proxyless bootstrap's file_watcher paths). */
  readonly dir: string;
  readonly certChainFile: string;
  readonly keyFile: string;
  readonly rootCertFile: string;
  readonly spiffeId: string;
}

export interface IssueOptions {
  /** The root written to root-cert.pem (what this workload trusts); default the issuing CA. */
  readonly trustRoot?: TestCa;
  readonly days?: number;
}

/**
 * A workload leaf for `id` signed by `ca`, as istiod issues them: empty subject, the SPIFFE id as
 * the only (critical) URI SAN, digitalSignature + keyEncipherment, serverAuth + clientAuth, CA:FALSE.
 * Written to `dir/<label>/`.
 */
export async function issueSpiffeCert(ca: TestCa, dir: string, label: string, id: string, opts: IssueOptions = {}): Promise<WorkloadCerts> {
  const d = join(dir, label);
  await mkdir(d, { recursive: true, mode: 0o700 });
  const files: WorkloadCerts = {
    dir: d,
    certChainFile: join(d, 'cert-chain.pem'),
    keyFile: join(d, 'key.pem'),
    rootCertFile: join(d, 'root-cert.pem'),
    spiffeId: id,
  };
  const csr = join(d, 'leaf.csr');
  const ext = join(d, 'leaf.ext');
  await writeFile(
    ext,
    [
      `subjectAltName=critical,URI:${id}`,
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      'basicConstraints=critical,CA:FALSE',
    ].join('\n'),
  );
  await openssl(['req', '-new', ...P256, '-keyout', files.keyFile, '-out', csr, '-subj', '/']);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    `0x${randomBytes(12).toString('hex')}`,
    '-days',
    String(opts.days ?? 1),
    '-extfile',
    ext,
    '-out',
    files.certChainFile,
  ]);
  await copyFile((opts.trustRoot ?? ca).certFile, files.rootCertFile);
  return files;
}

/** A TLS server leaf for `dnsNames` signed by `ca` (a gateway credential): PEM texts of the chain and key. */
export async function issueServerCert(
  ca: TestCa,
  dir: string,
  label: string,
  dnsNames: readonly string[],
): Promise<{ certPem: string; keyPem: string }> {
  const d = join(dir, label);
  await mkdir(d, { recursive: true, mode: 0o700 });
  const [csr, ext, cert, key] = ['server.csr', 'server.ext', 'cert.pem', 'key.pem'].map((f) => join(d, f)) as [
    string,
    string,
    string,
    string,
  ];
  await writeFile(
    ext,
    [
      `subjectAltName=${dnsNames.map((n) => `DNS:${n}`).join(',')}`,
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth',
      'basicConstraints=critical,CA:FALSE',
    ].join('\n'),
  );
  await openssl(['req', '-new', ...P256, '-keyout', key, '-out', csr, '-subj', `/CN=${dnsNames[0] ?? label}`]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    `0x${randomBytes(12).toString('hex')}`,
    '-days',
    '1',
    '-extfile',
    ext,
    '-out',
    cert,
  ]);
  return { certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') };
}
