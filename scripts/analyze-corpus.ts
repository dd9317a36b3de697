/**
 * Measures `meshctl analyze` on Istio's own analyzer test corpus: the cases of
 * pkg/config/analysis/analyzers/analyzers_test.go (input files, optional mesh config and mesh
 * networks files, expected messages as `{msg.Name, "Kind ns/name"}`) over the YAML of its
 * testdata/, read from the istio/istio mirror. Each case runs the whole of meshctl analyze
 * (`--use-kube=false -A -o json`, in-process) on the case's files; a case counts when every
 * expected message (code and resource, with multiplicity) is among the output. Istio's test runs
 * one analyzer per case, so other analyzers' messages are not counted against a case; messages
 * of the case analyzer's codes that the case does not expect are listed as extra.
 *
 * A measurement tool, not a test (CI has no mirror):
 *   node --import tsx scripts/analyze-corpus.ts [--mirror DIR] [--verbose] [--case SUBSTRING]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runCli } from '../src/meshctl/cli.js';
import type { CliIO } from '../src/meshctl/io.js';

const TEST_FILE = 'pkg/config/analysis/analyzers/analyzers_test.go';
const TESTDATA = 'pkg/config/analysis/analyzers/testdata';
const MESSAGES = 'pkg/config/analysis/msg/messages.yaml';

interface Expected {
  readonly code: string;
  readonly name: string;
  readonly origin: string;
}

interface CorpusCase {
  readonly name: string;
  readonly analyzer: string;
  readonly inputFiles: readonly string[];
  readonly meshConfigFile?: string;
  readonly meshNetworksFile?: string;
  readonly expected: readonly Expected[];
  /** Not in Istio's All() (so not run by istioctl analyze): left out of the figures. */
  readonly skipAll: boolean;
}

interface Produced {
  readonly code: string;
  readonly origin: string;
  readonly message: string;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const gitDir = path.join(arg('--mirror') ?? '/work/.mirror/istio+istio', 'repo');
const git = (...a: string[]): string => execFileSync('git', ['--git-dir', gitDir, ...a], { encoding: 'utf8', maxBuffer: 64 << 20 });

/** Message name → code, from Istio's catalogue. */
function messageCodes(): Map<string, string> {
  const doc = parseYaml(git('show', `HEAD:${MESSAGES}`)) as { messages: { name: string; code: string }[] };
  return new Map(doc.messages.map((m) => [m.name, m.code]));
}

/** The test grid's cases: each `{ name: …, … },` block at one tab of indentation inside `var testGrid`. */
function parseCases(src: string, codes: ReadonlyMap<string, string>): CorpusCase[] {
  const start = src.indexOf('var testGrid = []testCase{');
  const end = src.indexOf('\n}\n', start);
  const body = src.slice(start, end);
  const blocks = body.split(/\n\t\{\n/).slice(1);
  return blocks.map((b) => {
    const str = (field: string): string | undefined => new RegExp(`\\b${field}:\\s*"([^"]*)"`).exec(b)?.[1];
    const filesMatch = /inputFiles:\s*\[\]string\{([^}]*)\}/.exec(b);
    const inputFiles = [...(filesMatch?.[1] ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1] as string);
    const analyzer = /analyzer:\s*([^\n]+?),?\n/.exec(b)?.[1]?.trim() ?? '';
    const expected = [...b.matchAll(/\{msg\.(\w+),\s*"([^"]+)"\}/g)].map((m) => {
      const name = m[1] as string;
      const code = codes.get(name);
      if (code === undefined) throw new Error(`${TEST_FILE}: unknown message msg.${name}`);
      return { code, name, origin: m[2] as string };
    });
    const c: CorpusCase = { name: str('name') ?? '?', analyzer, inputFiles, expected, skipAll: /\bskipAll:\s*true/.test(b) };
    const mc = str('meshConfigFile');
    const mn = str('meshNetworksFile');
    return { ...c, ...(mc ? { meshConfigFile: mc } : {}), ...(mn ? { meshNetworksFile: mn } : {}) };
  });
}

/** `Kind name` (no namespace in the input) matches the resource in any namespace; `Kind ns/name` exactly. */
function originMatches(expected: string, produced: string): boolean {
  if (expected === produced) return true;
  const [kind, ref] = expected.split(' ', 2);
  if (ref === undefined || ref.includes('/')) return false;
  const [pKind, pRef] = produced.split(' ', 2);
  return pKind === kind && (pRef === ref || pRef?.split('/')[1] === ref);
}

async function analyze(dir: string, c: CorpusCase): Promise<{ code: number; produced: Produced[]; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: dir,
  };
  const argv = ['analyze', '--use-kube=false', '-A', '-o', 'json'];
  if (c.meshConfigFile) argv.push('--meshConfigFile', c.meshConfigFile);
  if (c.meshNetworksFile) argv.push('--meshNetworksFile', c.meshNetworksFile);
  const code = await runCli([...argv, ...c.inputFiles], io, { proxyCommands: false });
  const produced = stdout.trim() === '' ? [] : (JSON.parse(stdout) as Produced[]);
  return { code, produced, stderr };
}

async function main(): Promise<void> {
  const codes = messageCodes();
  const cases = parseCases(git('show', `HEAD:${TEST_FILE}`), codes).filter((c) => !c.skipAll);
  const only = arg('--case');
  const verbose = process.argv.includes('--verbose');
  // Codes each Istio analyzer is expected to produce somewhere in the corpus (to spot extras).
  const analyzerCodes = new Map<string, Set<string>>();
  for (const c of cases)
    for (const e of c.expected) (analyzerCodes.get(c.analyzer) ?? analyzerCodes.set(c.analyzer, new Set()).get(c.analyzer))?.add(e.code);

  const dir = mkdtempSync(path.join(tmpdir(), 'analyze-corpus-'));
  try {
    execFileSync('sh', ['-c', `git --git-dir '${gitDir}' archive HEAD ${TESTDATA} | tar -x -C '${dir}'`]);
    const cwd = path.join(dir, path.dirname(TESTDATA));
    let casesOk = 0;
    let msgsOk = 0;
    let msgsTotal = 0;
    let clean = 0;
    const missingByCode = new Map<string, number>();
    for (const c of cases) {
      if (only !== undefined && !c.name.includes(only)) continue;
      const { produced, stderr } = await analyze(cwd, c);
      const pool = [...produced];
      const missing: Expected[] = [];
      for (const e of c.expected) {
        const i = pool.findIndex((p) => p.code === e.code && originMatches(e.origin, p.origin));
        if (i >= 0) pool.splice(i, 1);
        else missing.push(e);
      }
      const own = analyzerCodes.get(c.analyzer) ?? new Set<string>();
      const extra = pool.filter((p) => own.has(p.code));
      msgsTotal += c.expected.length;
      msgsOk += c.expected.length - missing.length;
      if (missing.length === 0) casesOk++;
      if (missing.length === 0 && extra.length === 0) clean++;
      for (const m of missing) missingByCode.set(`${m.code} ${m.name}`, (missingByCode.get(`${m.code} ${m.name}`) ?? 0) + 1);
      if (verbose || only !== undefined || missing.length > 0 || extra.length > 0) {
        const mark = missing.length === 0 ? (extra.length === 0 ? 'ok   ' : 'extra') : 'MISS ';
        console.log(`${mark} ${c.name} [${c.analyzer}] (${c.inputFiles.join(' ')})`);
        for (const m of missing) console.log(`        missing ${m.code} ${m.name} ${m.origin}`);
        for (const p of extra) console.log(`        extra   ${p.code} ${p.origin}: ${p.message}`);
        if (verbose || only !== undefined) {
          for (const p of produced) console.log(`        got     ${p.code} ${p.origin}: ${p.message}`);
          if (stderr.trim() !== '') console.log(`        stderr  ${stderr.trim().split('\n').join('\n                ')}`);
        }
      }
    }
    const ran = only === undefined ? cases.length : cases.filter((c) => c.name.includes(only)).length;
    console.log(`\ncases with every expected message: ${casesOk} of ${ran} (${clean} also without extra messages of the case's codes)`);
    console.log(`expected messages produced: ${msgsOk} of ${msgsTotal}`);
    const byCount = [...missingByCode].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    if (byCount.length > 0) console.log(`missing by message: ${byCount.map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
