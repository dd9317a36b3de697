// npm-audit-gate — CI check: no high or critical advisory in production dependencies
// (`npm audit --omit=dev`). Exit 1 with the list when there is one. When the registry has no
// audit endpoint (a mirror answering 404/405) or cannot be reached, say so and exit 0: the check
// is skipped, not failed, because CI machines reach only the package registries.
import { execFile } from 'node:child_process';

const FAILING = ['high', 'critical'];

interface Advisory {
  readonly severity: string;
  readonly range?: string;
  readonly via?: readonly (string | { readonly title?: string; readonly url?: string })[];
}

/** `npm audit --json`: a report, or (registry without the endpoint) the HTTP error npm got. */
interface AuditJson {
  readonly metadata?: { readonly vulnerabilities?: Record<string, number> };
  readonly vulnerabilities?: Record<string, Advisory>;
  readonly message?: string;
  readonly error?: { readonly summary?: string };
}

execFile('npm', ['audit', '--omit=dev', '--json'], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
  let report: AuditJson;
  try {
    report = JSON.parse(stdout) as AuditJson;
  } catch {
    console.log(`npm audit: SKIPPED — no report (${err ? err.message.split('\n')[0] : 'empty output'})`);
    return;
  }
  const counts = report.metadata?.vulnerabilities;
  if (!counts) {
    const why = report.message ?? report.error?.summary ?? 'no vulnerability metadata in the answer';
    console.log(`npm audit: SKIPPED — the registry's audit endpoint did not answer (${why})`);
    return;
  }
  const bad = Object.entries(report.vulnerabilities ?? {}).filter(([, v]) => FAILING.includes(v.severity));
  if (bad.length === 0) {
    console.log(`npm audit: OK — no high or critical advisories in production dependencies (${JSON.stringify(counts)})`);
    return;
  }
  console.error(`npm audit: FAILED — ${bad.length} production dependencies with high or critical advisories:`);
  for (const [name, v] of bad) {
    const via = (v.via ?? []).map((x) => (typeof x === 'string' ? x : `${x.title ?? ''} ${x.url ?? ''}`.trim())).join('; ');
    console.error(`  ${name} (${v.severity}, ${v.range ?? '?'}): ${via}`);
  }
  process.exitCode = 1;
});
