/**
 * The properties of malformed config, checked in-process on the parse → validate → FileTracker →
 * ConfigStore path (what FileSource runs for each file it reads). Shared by the property tests
 * and bench/soak.ts.
 */
import assert from 'node:assert/strict';
import { configKeyString, formatConfigError, type ConfigError } from '../../../src/config/config.js';
import { boundedString, ERROR_BOUNDS } from '../../../src/config/error-bounds.js';
import { FileTracker, loadFileState, type FileState } from '../../../src/config/sources/file-tracker.js';
import { ConfigStore } from '../../../src/config/store.js';
import type { KindName } from '../../../src/config/kinds.js';
import { breaksFile, describeFile, type FuzzFile, type PlannedDoc } from './config-mutations.js';
import type { FuzzObject } from './istio-objects.js';

/** The first valid document of each key (a later one of the same key is reported and ignored). */
export function firstValid(docs: readonly PlannedDoc[]): Map<string, FuzzObject> {
  const out = new Map<string, FuzzObject>();
  for (const d of docs) if (d.expect.kind === 'valid' && !out.has(d.expect.key)) out.set(d.expect.key, d.expect.object);
  return out;
}

const show = (errors: readonly ConfigError[]): string => errors.map(formatConfigError).join('\n').slice(0, 2000);

/** The error set reported for an invalid document: names the kind (and object) and the field. */
export function assertReported(errors: readonly ConfigError[], d: PlannedDoc, file: string): void {
  if (d.expect.kind !== 'invalid') return;
  const e = d.expect;
  const [kind, namespace, ...rest] = e.key.split('/');
  const name = rest.join('/');
  // Errors keep names cut to ERROR_BOUNDS; past the per-file count only a summary says how many more.
  const shown = (s: string | undefined): string | undefined => (s === undefined ? s : boundedString(s, ERROR_BOUNDS.maxFieldChars));
  if (errors.some((x) => x.origin.file === file && / more errors not shown /.test(x.message))) return;
  const hit = errors.find(
    (x) =>
      x.kind === e.errorKind &&
      (x.path ?? '').startsWith(e.path) &&
      (!e.nameReadable || (x.namespace === shown(namespace) && x.name === shown(name))) &&
      x.origin.file === file,
  );
  assert.ok(hit, `no error for ${e.mutation} of ${kind}/${namespace}/${name.slice(0, 80)} at ${e.path} in ${file}; got:\n${show(errors)}`);
}

export interface FileCaseResult {
  readonly ms: number;
  readonly state: FileState;
}

/**
 * One file, in-process: first its valid documents alone (the last good version), then the fuzzed
 * bytes decoded as FileSource reads them. Then:
 * - nothing throws; every error names the file;
 * - a corruption that must break the file fails it whole, and the last good objects stay;
 * - otherwise every first valid document applies (to the tracker and the store) and every
 *   invalid one is reported with kind, namespace/name (when readable) and field path.
 */
export function checkFileCase(f: FuzzFile, dir = 'cfg'): FileCaseResult {
  const display = `${dir}/${f.name}`;
  const valid = firstValid(f.docs);
  const goodText = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...valid.values()] });
  const good = loadFileState(goodText, `${dir}/good.json`, undefined);
  assert.deepEqual(good.errors, [], `the valid documents alone must load: ${show(good.errors)}`);

  const tracker = new FileTracker();
  const store = new ConfigStore();
  store.apply(tracker.set(f.name, good));

  const text = f.bytes.toString('utf8'); // as FileSource's readFile(…, 'utf8'): bad bytes become U+FFFD
  const t0 = performance.now();
  const state = loadFileState(text, display, good);
  store.apply(tracker.set(f.name, state));
  const ms = performance.now() - t0;

  for (const e of state.errors) assert.equal(e.origin.file, display, `error without the file name: ${formatConfigError(e)}`);
  const keys = new Set([...state.objects.keys()]);
  const snapshot = store.snapshot();
  const inStore = (key: string): boolean => {
    const [kind, ns, ...name] = key.split('/');
    return snapshot.get(kind as KindName, ns ?? '', name.join('/')) !== undefined;
  };

  if (breaksFile(f.corruption)) {
    assert.ok(state.errors.length > 0, `a ${f.corruption} file was accepted: ${describeFile(f)}`);
    assert.deepEqual([...keys].sort(), [...good.objects.keys()].sort(), 'a broken file keeps its last good objects');
    if (f.corruption === 'oversize') assert.match(show(state.errors), /larger than the limit/);
    if (f.corruption === 'deep-nesting') assert.match(show(state.errors), /nesting deeper than|syntax error/);
    if (f.corruption === 'alias-bomb') assert.match(show(state.errors), /alias|cannot be expanded|nesting/);
    return { ms, state };
  }
  if (f.corruption !== 'none') return { ms, state }; // may or may not parse: no crash, errors name the file

  for (const key of valid.keys()) {
    assert.ok(keys.has(key), `valid ${key} not applied from ${describeFile(f)}; errors:\n${show(state.errors)}`);
    assert.ok(inStore(key), `valid ${key} not in the store`);
  }
  for (const d of f.docs) assertReported(state.errors, d, display);
  for (const [key, c] of state.objects) assert.equal(configKeyString(c.meta), key);
  return { ms, state };
}

/** Two files defining some of the same objects (same kind/namespace/name, other content). */
export interface DuplicateCase {
  readonly first: readonly FuzzObject[];
  readonly second: readonly FuzzObject[];
  /** Load order into the tracker (the winner must not depend on it). */
  readonly secondLoadedFirst: boolean;
}

/**
 * The same object in two files: the file first by path wins whatever the load order, the other
 * definition is reported naming both files and the object; deleting the winner hands the object
 * to the other file.
 */
export function checkDuplicateFiles(c: DuplicateCase): void {
  const list = (objs: readonly FuzzObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objs });
  const a = loadFileState(list(c.first), 'cfg/a.json', undefined);
  const b = loadFileState(list(c.second), 'cfg/b.json', undefined);
  assert.deepEqual([...a.errors, ...b.errors], [], 'both files valid on their own');
  const tracker = new FileTracker();
  const store = new ConfigStore();
  const load: [string, FileState][] = c.secondLoadedFirst
    ? [
        ['b.json', b],
        ['a.json', a],
      ]
    : [
        ['a.json', a],
        ['b.json', b],
      ];
  for (const [id, state] of load) store.apply(tracker.set(id, state));

  const version = (key: string): string | undefined => {
    const [kind, ns, ...name] = key.split('/');
    return store.snapshot().get(kind as KindName, ns ?? '', name.join('/'))?.meta.resourceVersion;
  };
  const errors = tracker.errors();
  for (const [key, objB] of b.objects) {
    const objA = a.objects.get(key);
    if (!objA) {
      assert.equal(version(key), objB.meta.resourceVersion, `${key} only in b.json applies`);
      continue;
    }
    assert.equal(version(key), objA.meta.resourceVersion, `${key}: a.json comes first and wins`);
    const e = errors.find((x) => x.origin.file === 'cfg/b.json' && `${x.kind}/${x.namespace}/${x.name}` === key);
    assert.ok(e, `no error for ${key} defined again in b.json: ${show(errors)}`);
    assert.match(e.message, /also defined in cfg\/a\.json/);
  }
  store.apply(tracker.set('a.json', undefined));
  for (const [key, objB] of b.objects) assert.equal(version(key), objB.meta.resourceVersion, `${key} falls to b.json once a.json is gone`);
  for (const key of a.objects.keys()) if (!b.objects.has(key)) assert.equal(version(key), undefined, `${key} deleted with a.json`);
  assert.deepEqual(tracker.errors(), [], 'no conflict left');
}
