/**
 * A hostile config corpus, generated at run time (never committed): files that the config sources
 * must reject while costing little memory. Deterministic for a seed, so two runs write the same
 * bytes and a `round` number varies every file's content (a rewrite is a real change that must be
 * re-read). Kinds of file, each a share of the corpus:
 * alias bombs, deep nesting (flow and block), non-UTF-8 bytes, invalid RE2 regexes (short and
 * huge), out-of-range ports (thousands per object), giant names and hosts (MB-long strings that
 * end up in error texts), many invalid documents in one file, syntax errors, documents over the
 * count limit, and one 5 MB file.
 */
import { aliasBomb, deepNesting } from './fuzz/config-mutations.js';

export interface HostileFile {
  readonly name: string;
  readonly bytes: Buffer;
  /** What the file attacks (for reports). */
  readonly attack: HostileAttack;
}

export type HostileAttack =
  | 'alias-bomb'
  | 'deep-flow'
  | 'deep-block'
  | 'non-utf8'
  | 'bad-regex'
  | 'huge-regex'
  | 'port-range'
  | 'giant-name'
  | 'giant-host'
  | 'many-invalid-docs'
  | 'syntax'
  | 'too-many-docs'
  | 'five-mb';

/** The attacks in the order the corpus cycles through them; the 5 MB file is added once per corpus. */
const CYCLE: readonly HostileAttack[] = [
  'alias-bomb',
  'deep-flow',
  'deep-block',
  'non-utf8',
  'bad-regex',
  'huge-regex',
  'port-range',
  'giant-name',
  'giant-host',
  'many-invalid-docs',
  'syntax',
  'too-many-docs',
];

/** mulberry32: a small seeded PRNG, enough to vary sizes and contents reproducibly. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VS = 'apiVersion: networking.istio.io/v1\nkind: VirtualService';
const SE = 'apiVersion: networking.istio.io/v1\nkind: ServiceEntry';

function badRegexDoc(name: string, regex: string): string {
  return `${VS}\nmetadata: {name: ${name}, namespace: hostile}\nspec:\n  hosts: [a.hostile.svc.cluster.local]\n  http:\n  - match:\n    - uri: {regex: ${JSON.stringify(regex)}}\n    route: [{destination: {host: a.hostile.svc.cluster.local}}]\n`;
}

function portRangeDoc(name: string, ports: number, first: number): string {
  const list = Array.from({ length: ports }, (_, i) => `{number: ${first + i}, name: p${i}, protocol: HTTP}`).join(', ');
  return `${SE}\nmetadata: {name: ${name}, namespace: hostile}\nspec:\n  hosts: [${name}.example.com]\n  ports: [${list}]\n`;
}

function fileFor(attack: HostileAttack, i: number, round: number, rnd: () => number): HostileFile {
  const tag = `r${round}-${i}`;
  const name = `hostile-${String(i).padStart(3, '0')}-${attack}.${attack === 'non-utf8' && i % 2 === 0 ? 'json' : 'yaml'}`;
  const between = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
  let text: string;
  switch (attack) {
    case 'alias-bomb':
      text = `# ${tag}\n${aliasBomb(between(6, 12))}`;
      break;
    case 'deep-flow':
      text = `# ${tag}\n${deepNesting(between(5_000, 20_000), 'flow')}`;
      break;
    case 'deep-block':
      text = `# ${tag}\n${deepNesting(between(150, 500), 'block')}`;
      break;
    case 'non-utf8': {
      const doc = name.endsWith('.json')
        ? JSON.stringify({
            apiVersion: 'networking.istio.io/v1',
            kind: 'VirtualService',
            metadata: { name: `bytes-${tag}` },
            spec: { hosts: ['x'] },
          })
        : `${VS}\nmetadata: {name: bytes-${tag}}\nspec: {hosts: [x]}\n`;
      const b = Buffer.from(doc);
      const at = between(0, b.length - 1);
      return {
        name,
        attack,
        bytes: Buffer.concat([b.subarray(0, at), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), b.subarray(at)]),
      };
    }
    case 'bad-regex':
      text = ['(?<=a)b', 'a(?!b)', '(a', '[z-a]', '\\1(a)', 'x{1001}']
        .map((re, j) => badRegexDoc(`re-${tag}-${j}`, `${re}${'y'.repeat(between(10, 500))}`))
        .join('---\n');
      break;
    case 'huge-regex':
      text = badRegexDoc(`hre-${tag}`, '(a'.repeat(between(5_000, 30_000)));
      break;
    case 'port-range':
      text = portRangeDoc(`ports-${tag}`, between(500, 2_000), 70_000 + round);
      break;
    case 'giant-name':
      text = `${VS}\nmetadata: {name: "n${tag}${'n'.repeat(between(20_000, 120_000))}", namespace: "${'s'.repeat(between(1000, 20_000))}"}\nspec: {hosts: [a.b]}\n`;
      break;
    case 'giant-host':
      text = `${VS}\nmetadata: {name: gh-${tag}, namespace: hostile}\nspec:\n  hosts: ["${'h'.repeat(between(20_000, 100_000))}"]\n  ${'u'.repeat(between(5_000, 30_000))}: 1\n`;
      break;
    case 'many-invalid-docs':
      text = Array.from(
        { length: between(100, 500) },
        (_, j) =>
          `${SE}\nmetadata: {name: many-${tag}-${j}, namespace: hostile}\nspec: {hosts: [m${j}.example.com], ports: [{number: 0, name: p}]}\n`,
      ).join('---\n');
      break;
    case 'syntax':
      text = `${VS}\nmetadata: {name: syn-${tag}}\nspec: {hosts: [a.b]}\n---\nbroken: [unclosed, ${'list, '.repeat(between(10, 5_000))}\n`;
      break;
    case 'too-many-docs':
      text = `# ${tag}\n${'---\n{}\n'.repeat(10_001)}`;
      break;
    case 'five-mb':
      text = `${VS}\nmetadata: {name: five-mb-${tag}, namespace: hostile}\nspec:\n  hosts: ["${'f'.repeat(5 * 1024 * 1024)}"]\n`;
      break;
  }
  return { name, attack, bytes: Buffer.from(text) };
}

export interface HostileCorpusOptions {
  /** Files in the corpus (default 300), the 5 MB file among them. */
  readonly files?: number;
  /** Varies every file's content (default 0); same seed and round, same bytes. */
  readonly round?: number;
  readonly seed?: number;
  /** Include the 5 MB file (default true). */
  readonly fiveMb?: boolean;
}

/** The corpus: `files` hostile files cycling through the attacks, deterministic for (seed, round). */
export function hostileCorpus(o: HostileCorpusOptions = {}): HostileFile[] {
  const n = o.files ?? 300;
  const round = o.round ?? 0;
  const rnd = prng((o.seed ?? 1) * 7919 + round);
  const out: HostileFile[] = [];
  for (let i = 0; i < n; i++) {
    const attack: HostileAttack = i === n - 1 && (o.fiveMb ?? true) ? 'five-mb' : (CYCLE[i % CYCLE.length] as HostileAttack);
    out.push(fileFor(attack, i, round, rnd));
  }
  return out;
}

/** The total size of a corpus in bytes. */
export const corpusBytes = (files: readonly HostileFile[]): number => files.reduce((n, f) => n + f.bytes.length, 0);
