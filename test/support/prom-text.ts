/**
 * A strict parser of the Prometheus text exposition format (0.0.4), for asserting /metrics.
 * Written here because the npm parser (parse-prometheus-text-format 1.1.1, unmaintained since
 * 2019) drops the labels, _sum and _count of labelled histograms. Every line must parse; a sample
 * must belong to a family declared by `# TYPE` before it; histogram series must be cumulative with
 * a +Inf bucket equal to _count. Any violation throws with the line number.
 */
export type PromType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';

export interface PromSample {
  /** Full sample name (e.g. `x_bucket`). */
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PromFamily {
  readonly name: string;
  readonly type: PromType;
  readonly help: string;
  readonly samples: readonly PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set<string>(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(s: string, where: string): number {
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`${where}: bad value "${s}"`);
  return Number(s);
}

function parseLabels(s: string, where: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1; // after '{'
  for (;;) {
    while (s[i] === ' ') i++;
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) };
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`${where}: label without '='`);
    const name = s.slice(i, eq).trim();
    if (!LABEL.test(name)) throw new Error(`${where}: bad label name "${name}"`);
    if (name in labels) throw new Error(`${where}: duplicate label "${name}"`);
    if (s[eq + 1] !== '"') throw new Error(`${where}: label value must be quoted`);
    let v = '';
    let j = eq + 2;
    for (; j < s.length && s[j] !== '"'; j++) {
      if (s[j] === '\\') {
        const n = s[++j];
        if (n === 'n') v += '\n';
        else if (n === '\\' || n === '"') v += n;
        else throw new Error(`${where}: bad escape \\${n ?? ''}`);
      } else v += s[j];
    }
    if (j >= s.length) throw new Error(`${where}: unterminated label value`);
    labels[name] = v;
    i = j + 1;
    if (s[i] === ',') i++;
    else if (s[i] !== '}') throw new Error(`${where}: expected ',' or '}' after label ${name}`);
  }
}

function familyOf(sample: string, families: ReadonlyMap<string, { type: PromType }>): string | undefined {
  if (families.has(sample)) return sample;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!sample.endsWith(suffix)) continue;
    const base = sample.slice(0, -suffix.length);
    const t = families.get(base)?.type;
    if (t === 'histogram' || (t === 'summary' && suffix !== '_bucket')) return base;
  }
  return undefined;
}

export function parsePromText(text: string): Map<string, PromFamily> {
  const fams = new Map<string, { name: string; type: PromType; help: string; samples: PromSample[] }>();
  const helps = new Map<string, string>();
  text.split('\n').forEach((raw, idx) => {
    const where = `line ${idx + 1}`;
    const line = raw.trimEnd();
    if (line === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m) return; // plain comment
      const [, kw, name = '', arg = ''] = m;
      if (!NAME.test(name)) throw new Error(`${where}: bad metric name "${name}"`);
      if (kw === 'HELP') helps.set(name, arg);
      else {
        if (!TYPES.has(arg)) throw new Error(`${where}: bad type "${arg}"`);
        if (fams.has(name)) throw new Error(`${where}: second TYPE for ${name}`);
        fams.set(name, { name, type: arg as PromType, help: '', samples: [] });
      }
      return;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`${where}: no value`);
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`${where}: bad metric name "${name}"`);
    let rest = line.slice(nameEnd);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, where));
    const parts = rest.trim().split(/\s+/);
    if (parts.length < 1 || parts.length > 2 || parts[0] === '') throw new Error(`${where}: expected "value [timestamp]"`);
    const value = parseValue(parts[0] ?? '', where);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`${where}: bad timestamp`);
    const fam = familyOf(name, fams);
    if (fam === undefined) throw new Error(`${where}: sample ${name} before any TYPE of its family`);
    fams.get(fam)?.samples.push({ name, labels, value });
  });
  for (const f of fams.values()) {
    f.help = helps.get(f.name) ?? '';
    if (f.type === 'histogram') checkHistogram(f);
  }
  return fams;
}

function seriesKey(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(
    Object.entries(labels)
      .filter(([k]) => k !== 'le')
      .sort(),
  );
}

function checkHistogram(f: PromFamily): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  const get = (k: string): { buckets: [number, number][]; count?: number } => {
    let s = series.get(k);
    if (!s) series.set(k, (s = { buckets: [] }));
    return s;
  };
  for (const s of f.samples) {
    const k = seriesKey(s.labels);
    if (s.name === `${f.name}_bucket`) {
      const le = s.labels.le;
      if (le === undefined) throw new Error(`${f.name}: bucket without le`);
      get(k).buckets.push([parseValue(le, f.name), s.value]);
    } else if (s.name === `${f.name}_count`) get(k).count = s.value;
  }
  for (const [k, s] of series) {
    const sorted = [...s.buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if ((sorted[i]?.[1] ?? 0) < (sorted[i - 1]?.[1] ?? 0)) throw new Error(`${f.name}${k}: buckets not cumulative`);
    }
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Infinity) throw new Error(`${f.name}${k}: no +Inf bucket`);
    if (s.count !== inf[1]) throw new Error(`${f.name}${k}: +Inf bucket ${inf[1]} != _count ${s.count}`);
  }
}

/** Upper bounds (without +Inf) of a histogram's first series. */
export function histogramBuckets(f: PromFamily): number[] {
  const first = f.samples.find((s) => s.name === `${f.name}_bucket`);
  if (!first) return [];
  const key = seriesKey(first.labels);
  return f.samples
    .filter((s) => s.name === `${f.name}_bucket` && seriesKey(s.labels) === key)
    .map((s) => Number(s.labels.le === '+Inf' ? Infinity : s.labels.le))
    .filter((b) => Number.isFinite(b))
    .sort((a, b) => a - b);
}
