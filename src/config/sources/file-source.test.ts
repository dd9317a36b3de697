import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createLogger, silentLogger } from '../../util/log.js';
import { formatConfigError } from '../config.js';
import { ConfigStore } from '../store.js';
import type { ConfigEvent } from '../store-types.js';
import { FileSource } from './file-source.js';

const vs = (name: string, host = 'a.example.com', namespace = 'default') => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ${name}
  namespace: ${namespace}
spec:
  hosts: [${host}]
  http:
  - route:
    - destination: {host: ${host}}
`;
const se = (name: string) =>
  JSON.stringify({
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name },
    spec: { hosts: [`${name}.example.com`], ports: [{ number: 443, name: 'tls', protocol: 'TLS' }], resolution: 'DNS' },
  });

/** Polls until `cond` holds (max 5 s): file events arrive asynchronously. */
async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Harness {
  dir: string;
  store: ConfigStore;
  source: FileSource;
  events: string[];
  names(kind?: 'VirtualService' | 'ServiceEntry'): string[];
  host(name: string): string | undefined;
  errors(): string[];
  stop(): Promise<void>;
}

async function setup(files: Record<string, string> = {}, start = true): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'meshpilot-files-'));
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), text);
  }
  const store = new ConfigStore();
  const events: string[] = [];
  store.onChange((evs: readonly ConfigEvent[]) => events.push(...evs.map((e) => `${e.type} ${e.key.name}`)));
  const source = new FileSource({ dir, logger: silentLogger, debounceMs: 10 });
  if (start) await source.start(store);
  const h: Harness = {
    dir,
    store,
    source,
    events,
    names: (kind = 'VirtualService') =>
      store
        .snapshot()
        .list(kind)
        .map((c) => `${c.meta.namespace}/${c.meta.name}`),
    host: (name) => {
      const c = store.snapshot().get('VirtualService', 'default', name);
      return c?.spec.hosts[0];
    },
    errors: () => [...store.errors().values()].flat().map(formatConfigError),
    stop: async () => {
      await source.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return h;
}

test('initial load: nested directories, YAML and JSON; dotfiles, dot-dirs and other files are skipped', async () => {
  const h = await setup({
    'a.yaml': vs('a'),
    'nested/deeper/b.yml': vs('b', 'b.example.com', 'team'),
    'nested/s.json': se('ext'),
    '.hidden.yaml': vs('hidden'),
    '.git/c.yaml': vs('in-dot-dir'),
    'README.md': 'not config',
    'notes.txt': vs('txt'),
  });
  try {
    // start() resolved: everything is in the store already.
    assert.deepEqual(h.names(), ['default/a', 'team/b']);
    assert.deepEqual(h.names('ServiceEntry'), ['default/ext']);
    assert.deepEqual(h.errors(), []);
    assert.deepEqual(h.events.sort(), ['add a', 'add b', 'add ext']);
  } finally {
    await h.stop();
  }
});

test('editing a file updates, deleting it deletes', async () => {
  const h = await setup({ 'a.yaml': vs('a') + '---\n' + vs('b') });
  try {
    h.events.length = 0;
    await writeFile(path.join(h.dir, 'a.yaml'), vs('a', 'new.example.com') + '---\n' + vs('b'));
    await waitFor('update of a', () => h.host('a') === 'new.example.com');
    assert.deepEqual(h.events, ['update a']);
    await rm(path.join(h.dir, 'a.yaml'));
    await waitFor('delete', () => h.names().length === 0);
    assert.deepEqual(h.events.slice(1).sort(), ['delete a', 'delete b']);
  } finally {
    await h.stop();
  }
});

test('broken YAML is reported and the objects of the file keep serving; fixing clears the error', async () => {
  const h = await setup({ 'a.yaml': vs('a') + '---\n' + vs('b') });
  try {
    await writeFile(path.join(h.dir, 'a.yaml'), 'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: [a\n');
    await writeFile(path.join(h.dir, 'new.yaml'), 'spec: {hosts: [x\n');
    const reported = (file: string) =>
      h.errors().some((e) => e.startsWith(`${path.join(h.dir, file)}:`) && e.includes('YAML syntax error'));
    await waitFor('syntax errors of both files', () => reported('a.yaml') && reported('new.yaml'));
    assert.deepEqual(h.names(), ['default/a', 'default/b'], 'last good version keeps serving');
    await writeFile(path.join(h.dir, 'a.yaml'), vs('a') + '---\n' + vs('b'));
    await rm(path.join(h.dir, 'new.yaml'));
    await waitFor('errors cleared', () => h.errors().length === 0);
    assert.deepEqual(h.names(), ['default/a', 'default/b']);
  } finally {
    await h.stop();
  }
});

test('an invalid VirtualService replacing a valid one: the old one stays, the error is reported, fixing clears it', async () => {
  const h = await setup({ 'vs.yaml': vs('a') });
  try {
    const before = h.store.snapshot().get('VirtualService', 'default', 'a');
    h.events.length = 0;
    await writeFile(
      path.join(h.dir, 'vs.yaml'),
      vs('a', 'a.example.com').replace(
        '    - destination: {host: a.example.com}',
        '    - destination: {host: a.example.com}\n      weight: -3\n    - destination: {host: b}\n      weight: 0',
      ),
    );
    await waitFor('validation error', () => h.errors().length > 0);
    assert.deepEqual(h.errors(), [
      `${path.join(h.dir, 'vs.yaml')}:11 VirtualService default/a spec.http[0].route[0].weight: weight -3 < 0`,
    ]);
    assert.equal(h.store.snapshot().get('VirtualService', 'default', 'a'), before);
    assert.deepEqual(h.events, []);
    await writeFile(path.join(h.dir, 'vs.yaml'), vs('a', 'fixed.example.com'));
    await waitFor('fixed', () => h.host('a') === 'fixed.example.com');
    assert.deepEqual(h.errors(), []);
    assert.deepEqual(h.events, ['update a']);
  } finally {
    await h.stop();
  }
});

test('files in a directory created after start are picked up; removing the directory deletes them', async () => {
  const h = await setup({ 'a.yaml': vs('a') });
  try {
    await mkdir(path.join(h.dir, 'team/x/y'), { recursive: true });
    await writeFile(path.join(h.dir, 'team/x/y/b.yaml'), vs('b'));
    await waitFor('b added', () => h.names().includes('default/b'));
    await writeFile(path.join(h.dir, 'team/x/y/c.yaml'), vs('c'));
    await waitFor('c added (watch on the new directory)', () => h.names().includes('default/c'));
    await rm(path.join(h.dir, 'team'), { recursive: true });
    await waitFor('b and c deleted', () => h.names().join() === 'default/a');
  } finally {
    await h.stop();
  }
});

test('an editor-style write (temp file renamed into place) is one update', async () => {
  const h = await setup({ 'vs.yaml': vs('a') });
  try {
    h.events.length = 0;
    const tmp = path.join(h.dir, '.vs.yaml.swp');
    await writeFile(tmp, vs('a', 'renamed.example.com'));
    await rename(tmp, path.join(h.dir, 'vs.yaml'));
    await waitFor('renamed content', () => h.host('a') === 'renamed.example.com');
    assert.deepEqual(h.events, ['update a']);
    // A file renamed from a non-config name into a config name is a new file.
    await writeFile(path.join(h.dir, 'incoming.tmp'), vs('b'));
    await rename(path.join(h.dir, 'incoming.tmp'), path.join(h.dir, 'b.yaml'));
    await waitFor('b added', () => h.names().includes('default/b'));
  } finally {
    await h.stop();
  }
});

test('the same object in two files: the first file in sorted order wins, the other gets an error naming both', async () => {
  const h = await setup({ 'b.yaml': vs('dup', 'from-b.example.com'), 'a/x.yaml': vs('dup', 'from-a.example.com') });
  try {
    assert.equal(h.host('dup'), 'from-a.example.com');
    assert.deepEqual(h.errors(), [
      `${path.join(h.dir, 'b.yaml')}:1 VirtualService default/dup: also defined in ${path.join(h.dir, 'a/x.yaml')}:1, which comes first and is used; this definition in ${path.join(h.dir, 'b.yaml')} is ignored`,
    ]);
    await rm(path.join(h.dir, 'a/x.yaml'));
    await waitFor('b takes over', () => h.host('dup') === 'from-b.example.com');
    assert.deepEqual(h.errors(), []);
  } finally {
    await h.stop();
  }
});

test('the same object in two files: a warning naming both file:line at start and at every reload', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'meshpilot-files-'));
  await writeFile(path.join(dir, 'a.yaml'), vs('dup', 'from-a.example.com'));
  await writeFile(path.join(dir, 'b.yaml'), `# the same object again\n---\n${vs('dup', 'from-b.example.com')}`);
  const lines: string[] = [];
  const store = new ConfigStore();
  const source = new FileSource({ dir, logger: createLogger({ sink: (l) => lines.push(l), format: 'json' }), debounceMs: 10 });
  const warnings = () =>
    lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.level === 'warn' && /defined in two files/.test(String(r.msg)));
  try {
    await source.start(store);
    const expected = {
      msg: `VirtualService default/dup is defined in two files: ${path.join(dir, 'a.yaml')}:1 is used, ${path.join(dir, 'b.yaml')}:3 is ignored`,
      used: `${path.join(dir, 'a.yaml')}:1`,
      ignored: `${path.join(dir, 'b.yaml')}:3`,
    };
    assert.deepEqual(
      warnings().map((w) => ({ msg: w.msg, used: w.used, ignored: w.ignored })),
      [expected],
    );
    // A reload of any file says it again (the store logs each config error once only).
    await writeFile(path.join(dir, 'c.yaml'), vs('other'));
    await waitFor('the reload', () => store.snapshot().get('VirtualService', 'default', 'other') !== undefined);
    await source.settled();
    assert.equal(warnings().length, 2);
    await rm(path.join(dir, 'b.yaml'));
    await waitFor('b gone', () => [...store.errors().values()].flat().length === 0);
    await source.settled();
    assert.equal(warnings().length, 2, 'no duplicate, no warning');
  } finally {
    await source.stop();
    await rm(dir, { recursive: true, force: true });
  }
});

test('symlinks are followed and symlink loops do not hang the walk', async () => {
  const h = await setup({ 'real/a.yaml': vs('a') }, false);
  try {
    await symlink(path.join(h.dir, 'real'), path.join(h.dir, 'link'));
    await symlink(h.dir, path.join(h.dir, 'real/loop'));
    await symlink(path.join(h.dir, 'nowhere'), path.join(h.dir, 'broken.yaml'));
    await h.source.start(h.store);
    // real/ and link/ are the same directory: read once, so no duplicate-definition error.
    assert.deepEqual(h.names(), ['default/a']);
    assert.deepEqual(h.errors(), []);
  } finally {
    await h.stop();
  }
});

test('an atomic write (hidden temp file renamed over the target) re-reads that file without walking the tree; a new directory walks', async () => {
  const h = await setup({ 'a.yaml': vs('a'), 'sub/b.yaml': vs('b', 'b.example.com') });
  try {
    const walks = h.source.scans.walks;
    await writeFile(path.join(h.dir, '.a.yaml.1234.tmp'), vs('a', 'a2.example.com'));
    await rename(path.join(h.dir, '.a.yaml.1234.tmp'), path.join(h.dir, 'a.yaml'));
    await waitFor('a re-read', () => h.host('a') === 'a2.example.com');
    await writeFile(path.join(h.dir, 'notes.txt'), 'not config');
    await h.source.settled();
    assert.equal(h.source.scans.walks, walks, 'temp files and non-config files cause no walk');
    assert.ok(h.source.scans.restats > 0);
    await mkdir(path.join(h.dir, 'new'));
    await writeFile(path.join(h.dir, 'new/c.yaml'), vs('c', 'c.example.com'));
    await waitFor('c loaded from the new directory', () => h.names().includes('default/c'));
    assert.ok(h.source.scans.walks > walks, 'a new directory is walked');
  } finally {
    await h.stop();
  }
});

test('a ConfigMap-style volume: swapping the ..data symlink to a new timestamped directory updates the files that point through it', async () => {
  const h = await setup({ 'cm/..2026_01/vs.yaml': vs('a'), 'cm/..2026_02/vs.yaml': vs('a', 'swapped.example.com') }, false);
  try {
    await symlink('..2026_01', path.join(h.dir, 'cm/..data'));
    await symlink('..data/vs.yaml', path.join(h.dir, 'cm/vs.yaml'));
    await h.source.start(h.store);
    assert.equal(h.host('a'), 'a.example.com');
    // The kubelet's atomic update: a new ..data_tmp link renamed over ..data (events name only dot-files).
    await symlink('..2026_02', path.join(h.dir, 'cm/..data_tmp'));
    await rename(path.join(h.dir, 'cm/..data_tmp'), path.join(h.dir, 'cm/..data'));
    await waitFor('the swapped content', () => h.host('a') === 'swapped.example.com');
  } finally {
    await h.stop();
  }
});

test('many files, one edited: the edit and a new file beside it are picked up (hinted files only are stat-ed)', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 200; i++) files[`d${i % 10}/vs-${i}.yaml`] = vs(`vs-${i}`);
  const h = await setup(files);
  try {
    h.events.length = 0;
    await writeFile(path.join(h.dir, 'd3/vs-13.yaml'), vs('vs-13', 'edited.example.com'));
    await waitFor('the edit', () => h.host('vs-13') === 'edited.example.com');
    await writeFile(path.join(h.dir, 'd3/new.yaml'), vs('new'));
    await waitFor('the new file', () => h.host('new') === 'a.example.com');
    await rm(path.join(h.dir, 'd4/vs-14.yaml'));
    await waitFor('the deletion', () => h.host('vs-14') === undefined);
    assert.deepEqual(h.events, ['update vs-13', 'add new', 'delete vs-14']);
  } finally {
    await h.stop();
  }
});

test('a missing directory fails start(); a file over the size limit is an error', async () => {
  const missing = new FileSource({ dir: path.join(os.tmpdir(), 'meshpilot-no-such-dir-' + process.pid), logger: silentLogger });
  await assert.rejects(missing.start(new ConfigStore()), /does not exist/);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'meshpilot-files-'));
  try {
    await writeFile(path.join(dir, 'big.yaml'), vs('a') + '#'.repeat(200));
    const store = new ConfigStore();
    const source = new FileSource({ dir, logger: silentLogger, limits: { maxFileBytes: 100 } });
    await source.start(store);
    assert.match(
      [...store.errors().values()].flat().map(formatConfigError).join(),
      /big\.yaml: file is \d+ bytes, larger than the limit of 100 bytes/,
    );
    await source.stop();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('after stop() no further changes reach the sink', async () => {
  const h = await setup({ 'a.yaml': vs('a') });
  try {
    await h.source.stop();
    await writeFile(path.join(h.dir, 'b.yaml'), vs('b'));
    await new Promise((r) => setTimeout(r, 100)); // give a (wrongly) live watcher time to fire
    assert.deepEqual(h.names(), ['default/a']);
  } finally {
    await h.stop();
  }
});

test('a change is reported with when its file event arrived: the settle delay before the read is not hidden', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'meshpilot-files-'));
  const store = new ConfigStore();
  const seen: { observedAt: number | undefined; appliedAt: number }[] = [];
  store.onChange((_events, _snap, observedAt) => seen.push({ observedAt, appliedAt: performance.timeOrigin + performance.now() }));
  // A long settle, so the gap between the event and the read is unmistakable.
  const source = new FileSource({ dir, logger: silentLogger, debounceMs: 200 });
  try {
    await source.start(store);
    const writtenAt = performance.timeOrigin + performance.now();
    await writeFile(path.join(dir, 'a.yaml'), vs('a'));
    await waitFor('the new file', () => seen.length > 0);
    const { observedAt, appliedAt } = seen[0]!;
    assert.ok(observedAt !== undefined, 'a change a file event announced carries the event time');
    assert.ok(observedAt >= writtenAt - 1, `observed ${observedAt} before the write ${writtenAt}`);
    assert.ok(appliedAt - observedAt >= 190, `the settle (200 ms) lies between the event and the read (${appliedAt - observedAt} ms)`);
  } finally {
    await source.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
