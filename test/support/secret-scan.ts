/**
 * Finds secret material in text a test captured (log lines, debug bodies, error messages): PEM
 * private keys, JWTs and CSR bodies. A finding names the kind, where and which line, never the
 * secret itself, so a failing assertion does not print the leak a second time.
 */

export type SecretKind = 'private key' | 'JWT' | 'CSR';

export interface SecretFinding {
  readonly kind: SecretKind;
  /** What was scanned (e.g. "meshpilot stderr", "GET /debug/configz"). */
  readonly source: string;
  /** 1-based line in that text. */
  readonly line: number;
}

/**
 * PEM private keys of any type (PKCS#1 RSA, SEC1 EC, PKCS#8, encrypted PKCS#8, OpenSSH); a JWT's
 * header and payload (both base64url JSON objects, so both start `eyJ`); a PEM CSR.
 */
const PATTERNS: readonly (readonly [SecretKind, RegExp])[] = [
  ['private key', /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/],
  ['JWT', /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\./],
  ['CSR', /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----/],
];

/** Runs of base64 long enough to hold a key or CSR without its PEM armour, or PEM text in base64 (one line). */
const BASE64_RUN = /[A-Za-z0-9+/]{100,}={0,2}/g;

/** Offset just past a DER tag+length at `i`, or -1. */
function skipHeader(b: Buffer, i: number, tag: number): number {
  if (b[i] !== tag) return -1;
  const first = b[i + 1];
  if (first === undefined) return -1;
  return first < 0x80 ? i + 2 : i + 2 + (first & 0x7f);
}

/**
 * A DER key or CSR by its opening bytes: PKCS#8 and PKCS#1 keys start SEQUENCE { INTEGER 0, …
 * (SEQUENCE | INTEGER) }, SEC1 EC keys SEQUENCE { INTEGER 1, OCTET STRING }, a CSR
 * SEQUENCE { SEQUENCE { INTEGER 0, SEQUENCE (subject) … } }.
 */
function derKind(b: Buffer): SecretKind | undefined {
  const inner = skipHeader(b, 0, 0x30);
  if (inner < 0) return undefined;
  const at = (off: number, ...bytes: number[]): boolean => bytes.every((x, k) => b[off + k] === x);
  if (at(inner, 0x02, 0x01, 0x00, 0x30) || at(inner, 0x02, 0x01, 0x00, 0x02) || at(inner, 0x02, 0x01, 0x01, 0x04)) return 'private key';
  const info = skipHeader(b, inner, 0x30);
  if (info > 0 && at(info, 0x02, 0x01, 0x00, 0x30)) return 'CSR';
  return undefined;
}

function lineKinds(l: string): SecretKind[] {
  const kinds = new Set<SecretKind>();
  for (const [kind, re] of PATTERNS) if (re.test(l)) kinds.add(kind);
  for (const m of l.matchAll(BASE64_RUN)) {
    const bytes = Buffer.from(m[0], 'base64');
    const kind = derKind(bytes);
    if (kind) kinds.add(kind);
    // A Kubernetes Secret's `data` holds PEM text in base64.
    const decoded = bytes.toString('latin1');
    for (const [k, re] of PATTERNS) if (re.test(decoded)) kinds.add(k);
  }
  return [...kinds];
}

/** Every finding in `text`, line by line. */
export function scanForSecrets(text: string, source: string): SecretFinding[] {
  const out: SecretFinding[] = [];
  const lines = text.split('\n');
  lines.forEach((l, i) => {
    for (const kind of lineKinds(l)) out.push({ kind, source, line: i + 1 });
  });
  return out;
}

/** One line per finding, without the secret. */
export function describeFindings(findings: readonly SecretFinding[]): string {
  return findings.map((f) => `${f.kind} in ${f.source}, line ${f.line}`).join('\n');
}

/** Collects captured text from several places and checks all of it at once. */
export class SecretScanner {
  private readonly findings: SecretFinding[] = [];
  private readonly sources: string[] = [];

  add(source: string, text: string): void {
    this.sources.push(source);
    this.findings.push(...scanForSecrets(text, source));
  }

  /** Names of everything scanned so far (a test asserts its flows were really captured). */
  scanned(): readonly string[] {
    return this.sources;
  }

  all(): readonly SecretFinding[] {
    return this.findings;
  }

  /** Throws naming every finding (kind, source, line), never the secret text. */
  assertClean(): void {
    if (this.findings.length > 0) throw new Error(`secret material in captured output:\n${describeFindings(this.findings)}`);
  }
}
