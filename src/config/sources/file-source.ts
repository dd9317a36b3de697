/**
 * Config from a directory tree of `.yaml`/`.yml`/`.json` files, watched for changes.
 *
 * Each directory gets its own fs.watch (inotify on Linux): Node 20's `recursive` mode on Linux
 * is a JS emulation that drops events for directories created while it runs. Any event only
 * schedules a rescan after a short settle delay (editors write a temp file and rename it into
 * place; tools write many files at once); the rescan stats the tree, re-reads the files whose
 * stat signature changed or that an event named, and applies the net changes as one batch. When
 * every event named a config file in a known directory, only those files are stat'ed (a tree of
 * 3000 files is not walked for one edit); anything else — a directory, a dot-name such as a
 * ConfigMap's `..data` swap, an event without a name, the periodic resync — walks the whole tree.
 */
import { watch, type FSWatcher } from 'node:fs';
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ConfigError } from '../config.js';
import { errorsDigest } from '../error-bounds.js';
import { DEFAULT_PARSE_LIMITS, fileTooLargeMessage, type ParseLimits } from '../parse-limits.js';
import type { ConfigChange, ConfigSink, ConfigSource } from '../store-types.js';
import { errorMessage, MeshError } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { realClock } from '../../util/clock.js';
import { compareIds } from '../../util/order.js';
import { FileTracker, formatOrigin, loadFileState, type LoadOptions } from './file-tracker.js';

export interface FileSourceOptions {
  readonly dir: string;
  readonly logger: Logger;
  /** Quiet time after the last file event before rescanning (default 30 ms). */
  readonly debounceMs?: number;
  /** Name under which errors are reported to the sink (default `file:<dir>`). */
  readonly name?: string;
  /** Namespace for objects that name none (default `default`). */
  readonly defaultNamespace?: string;
  readonly limits?: Partial<ParseLimits>;
  /** Also rescan every this many ms, as a net under lost events (default 0: off). */
  readonly resyncMs?: number;
}

const CONFIG_EXT = /\.(ya?ml|json)$/i;
const MAX_DIR_DEPTH = 64;
/** Rescan at the latest this long after the first event of a burst that never settles. */
const MAX_SETTLE_FACTOR = 20;

interface Entry {
  readonly abs: string;
  /** Changes whenever the file (or the target of a symlink) is replaced or written. */
  readonly sig: string;
  readonly size: number;
}

interface Known {
  readonly sig: string;
  readonly hash: string;
}

export class FileSource implements ConfigSource {
  readonly #dir: string;
  readonly #log: Logger;
  readonly #name: string;
  readonly #settleMs: number;
  readonly #resyncMs: number;
  readonly #load: LoadOptions;
  readonly #maxBytes: number;
  readonly #tracker = new FileTracker();
  readonly #known = new Map<string, Known>();
  /** One watcher per directory path, with the inode it watches (a re-pointed symlink needs a new one). */
  readonly #watchers = new Map<string, { readonly watcher: FSWatcher; readonly inode: string }>();
  #sink: ConfigSink | undefined;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #resync: NodeJS.Timeout | undefined;
  #burstStart = 0;
  #running: Promise<void> | undefined;
  #again = false;
  /** Absolute paths an event named since the last scan: re-read even if their stat looks unchanged. */
  #hinted = new Set<string>();
  /** When the latest filesystem event since the last scan arrived (realClock ms); undefined for walks no event asked for. */
  #eventAt: number | undefined;
  /** The next scan must walk the whole tree (an event without a file name, a resync). */
  #walkAll = true;
  /** The last walk's listing and its directories (absolute path → id), for scans of hinted files only. */
  #listing: Map<string, Entry> | undefined;
  #dirIds = new Map<string, string>();
  /** Digest of the error set last reported (errorsDigest). */
  #lastReported: string | undefined;
  #rootError: ConfigError | undefined;
  #scans = { walks: 0, restats: 0 };

  constructor(opts: FileSourceOptions) {
    this.#dir = opts.dir;
    this.#log = opts.logger;
    this.#name = opts.name ?? `file:${opts.dir}`;
    this.#settleMs = opts.debounceMs ?? 30;
    this.#resyncMs = opts.resyncMs ?? 0;
    const load: { limits?: Partial<ParseLimits>; logger: Logger; defaultNamespace?: string } = { logger: opts.logger };
    if (opts.limits) load.limits = opts.limits;
    if (opts.defaultNamespace !== undefined) load.defaultNamespace = opts.defaultNamespace;
    this.#load = load;
    this.#maxBytes = opts.limits?.maxFileBytes ?? DEFAULT_PARSE_LIMITS.maxFileBytes;
  }

  async start(sink: ConfigSink): Promise<void> {
    if (this.#sink) throw new MeshError('INTERNAL', 'FileSource started twice');
    const root = await stat(this.#dir).catch(() => undefined);
    if (!root?.isDirectory()) throw new MeshError('INVALID_ARGUMENT', `config directory ${this.#dir} does not exist or is not a directory`);
    this.#sink = sink;
    await this.#scan();
    if (this.#resyncMs > 0) {
      this.#resync = setInterval(() => {
        this.#walkAll = true;
        this.#schedule(0);
      }, this.#resyncMs);
      this.#resync.unref();
    }
    this.#log.info('config directory loaded', { dir: this.#dir, files: this.#known.size, errors: this.#tracker.errors().length });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#resync) clearInterval(this.#resync);
    for (const w of this.#watchers.values()) w.watcher.close();
    this.#watchers.clear();
    await this.#running;
  }

  /** Scans so far: whole-tree walks, and scans that re-stat'ed just the files events named. */
  get scans(): { readonly walks: number; readonly restats: number } {
    return { ...this.#scans };
  }

  /** Resolves once every change seen so far has been applied (tests, and `meshctl` one-shots). */
  async settled(): Promise<void> {
    while (this.#running || this.#timer) {
      if (this.#running) await this.#running;
      else await new Promise((r) => setTimeout(r, this.#settleMs));
    }
  }

  #schedule(delay = this.#settleMs): void {
    if (this.#stopped) return;
    const now = Date.now();
    if (!this.#timer) this.#burstStart = now;
    else clearTimeout(this.#timer);
    const overdue = now - this.#burstStart >= this.#settleMs * MAX_SETTLE_FACTOR;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#scan();
      },
      overdue ? 0 : delay,
    );
  }

  /** Runs one rescan at a time; a request during a scan runs one more afterwards. */
  #scan(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#scanOnce();
        } while (this.#again && !this.#stopped);
      } catch (err) {
        // Never let a scan failure escape into a timer callback; the next event tries again.
        this.#log.error('config directory scan failed', { dir: this.#dir, error: errorMessage(err) });
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async #scanOnce(): Promise<void> {
    const hinted = this.#hinted;
    this.#hinted = new Set();
    // The settle delay before this scan is part of the push's debounce, not added to it.
    const observedAt = this.#eventAt;
    this.#eventAt = undefined;
    const walkAll = this.#walkAll || hinted.size === 0;
    this.#walkAll = false;
    let listing = walkAll ? undefined : await this.#restatHinted(hinted);
    if (listing) this.#scans.restats++;
    else {
      this.#scans.walks++;
      listing = await this.#walk();
    }
    if (this.#stopped || !this.#sink) return;
    if (!listing) {
      // The root vanished (unmounted, being replaced): keep serving everything we have.
      this.#rootError = { origin: { file: this.#dir }, message: 'config directory is missing; keeping the last loaded config' };
      this.#report();
      return;
    }
    this.#rootError = undefined;

    const changes: ConfigChange[] = [];
    for (const id of [...this.#known.keys()]) {
      if (listing.has(id)) continue;
      this.#known.delete(id);
      changes.push(...this.#tracker.set(id, undefined));
      this.#log.debug('config file removed', { file: id });
    }
    const ids = [...listing.keys()].sort(compareIds);
    let reloaded = changes.length > 0;
    for (const id of ids) {
      const entry = listing.get(id);
      if (!entry) continue;
      const known = this.#known.get(id);
      if (known && known.sig === entry.sig && !hinted.has(entry.abs)) continue;
      changes.push(...(await this.#read(id, entry, known)));
      reloaded = true;
      if (this.#stopped) return;
    }
    if (changes.length > 0) this.#sink.apply(changes, observedAt);
    if (reloaded) this.#warnDuplicates();
    this.#report();
  }

  async #read(id: string, entry: Entry, known: Known | undefined): Promise<ConfigChange[]> {
    const display = path.join(this.#dir, id);
    const previous = this.#tracker.state(id);
    if (entry.size > this.#maxBytes) {
      this.#known.set(id, { sig: entry.sig, hash: '' });
      const error: ConfigError = { origin: { file: display }, message: fileTooLargeMessage(entry.size, { maxFileBytes: this.#maxBytes }) };
      return this.#tracker.set(id, { objects: previous?.objects ?? new Map(), errors: [error] });
    }
    let text: string;
    try {
      text = await readFile(entry.abs, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // Deleted between the walk and the read; the event for that is already queued.
        this.#known.delete(id);
        return this.#tracker.set(id, undefined);
      }
      this.#known.set(id, { sig: entry.sig, hash: '' });
      const error: ConfigError = { origin: { file: display }, message: `cannot read file: ${errorMessage(err)}` };
      return this.#tracker.set(id, { objects: previous?.objects ?? new Map(), errors: [error] });
    }
    const hash = createHash('sha256').update(text).digest('hex');
    this.#known.set(id, { sig: entry.sig, hash });
    if (known && known.hash === hash && previous) return []; // touched, not changed
    this.#log.debug('config file loaded', { file: id });
    return this.#tracker.set(id, loadFileState(text, display, previous, this.#load));
  }

  /** Every reload: one warning per object that two files define, naming both (the store logs each error once only). */
  #warnDuplicates(): void {
    for (const d of this.#tracker.conflicts()) {
      const m = d.used.meta;
      for (const { origin } of d.ignored) {
        this.#log.warn(
          `${m.kind} ${m.namespace}/${m.name} is defined in two files: ${formatOrigin(d.usedOrigin)} is used, ${formatOrigin(origin)} is ignored`,
          {
            kind: m.kind,
            namespace: m.namespace,
            name: m.name,
            used: formatOrigin(d.usedOrigin),
            ignored: formatOrigin(origin),
          },
        );
      }
    }
  }

  #report(): void {
    if (!this.#sink) return;
    const errors = this.#tracker.errors();
    if (this.#rootError) errors.unshift(this.#rootError);
    const digest = errorsDigest(errors);
    if (digest === this.#lastReported) return;
    this.#lastReported = digest;
    this.#sink.reportErrors(this.#name, errors);
  }

  /**
   * The last listing with just the hinted files stat'ed again, or undefined when the hints need a
   * walk: a name that is not a config file of a directory the last walk saw, or is now a directory.
   */
  async #restatHinted(hinted: ReadonlySet<string>): Promise<Map<string, Entry> | undefined> {
    if (!this.#listing) return undefined;
    const files = new Map(this.#listing);
    for (const abs of hinted) {
      const name = path.basename(abs);
      const dirId = this.#dirIds.get(path.dirname(abs));
      if (dirId === undefined || this.#dirIds.has(abs)) return undefined;
      if (name.startsWith('.') || !CONFIG_EXT.test(name)) {
        // Not a config file name: an atomic writer's temp file (gone after its rename) or any other
        // plain file changes nothing. A directory or symlink may (a ConfigMap's `..data` swap): walk.
        const l = await lstat(abs).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : undefined));
        if (l === null || l?.isFile() === true) continue;
        return undefined;
      }
      const id = dirId === '' ? name : `${dirId}/${name}`;
      const s = await stat(abs, { bigint: true }).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? null : undefined));
      if (s === undefined) return undefined;
      if (s === null) files.delete(id);
      else if (s.isFile()) files.set(id, { abs, sig: `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`, size: Number(s.size) });
      else return undefined;
    }
    this.#listing = files;
    return files;
  }

  /**
   * Lists config files (id = `/`-separated path under the root) and keeps one watcher per
   * directory. Dot-files and dot-directories are skipped (editor temp files, Kubernetes
   * ConfigMap `..data` internals); symlinks are followed, loops are cut by (dev, inode).
   * Returns undefined when the root itself cannot be read.
   */
  async #walk(): Promise<Map<string, Entry> | undefined> {
    const files = new Map<string, Entry>();
    const seenDirs = new Set<string>();
    const liveDirs = new Set<string>();
    const dirIds = new Map<string, string>();
    const queue: { abs: string; id: string; depth: number }[] = [{ abs: this.#dir, id: '', depth: 0 }];
    for (let next = 0; next < queue.length; next++) {
      const dir = queue[next];
      if (!dir) break;
      const st = await stat(dir.abs, { bigint: true }).catch(() => undefined);
      if (!st?.isDirectory()) {
        if (dir.depth === 0) return undefined;
        continue;
      }
      const inode = `${st.dev}:${st.ino}`;
      if (seenDirs.has(inode)) continue; // a symlink back up the tree
      seenDirs.add(inode);
      liveDirs.add(dir.abs);
      dirIds.set(dir.abs, dir.id);
      this.#watchDir(dir.abs, inode); // before listing, so a file created meanwhile still raises an event
      const entries = await readdir(dir.abs, { withFileTypes: true }).catch((err: unknown) => {
        this.#log.warn('cannot list config directory', { dir: dir.abs, error: errorMessage(err) });
        return undefined;
      });
      if (!entries) {
        if (dir.depth === 0) return undefined;
        continue;
      }
      await Promise.all(
        entries.map(async (e) => {
          if (e.name.startsWith('.')) return;
          const abs = path.join(dir.abs, e.name);
          const id = dir.id === '' ? e.name : `${dir.id}/${e.name}`;
          const isDir = e.isDirectory();
          if (!isDir && !e.isSymbolicLink() && !(e.isFile() && CONFIG_EXT.test(e.name))) return;
          const s = await stat(abs, { bigint: true }).catch(() => undefined); // follows symlinks
          if (!s) return; // broken symlink, or gone already
          if (s.isDirectory()) {
            if (dir.depth + 1 < MAX_DIR_DEPTH) queue.push({ abs, id, depth: dir.depth + 1 });
          } else if (s.isFile() && CONFIG_EXT.test(e.name)) {
            files.set(id, { abs, sig: `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`, size: Number(s.size) });
          }
        }),
      );
    }
    for (const [abs, w] of this.#watchers) {
      if (liveDirs.has(abs)) continue;
      w.watcher.close();
      this.#watchers.delete(abs);
    }
    this.#listing = files;
    this.#dirIds = dirIds;
    return files;
  }

  #watchDir(abs: string, inode: string): void {
    if (this.#stopped) return;
    const existing = this.#watchers.get(abs);
    if (existing?.inode === inode) return;
    existing?.watcher.close();
    try {
      const w = watch(abs, { persistent: true }, (_event, filename) => {
        if (filename) this.#hinted.add(path.join(abs, filename.toString()));
        else this.#walkAll = true;
        this.#eventAt = realClock.now();
        this.#schedule();
      });
      w.on('error', (err) => {
        // The directory went away (or the watch broke): drop it; the rescan re-adds what exists.
        this.#log.debug('config directory watch ended', { dir: abs, error: errorMessage(err) });
        w.close();
        if (this.#watchers.get(abs)?.watcher === w) this.#watchers.delete(abs);
        this.#walkAll = true;
        this.#schedule();
      });
      this.#watchers.set(abs, { watcher: w, inode });
    } catch (err) {
      this.#watchers.delete(abs);
      this.#log.warn('cannot watch config directory', { dir: abs, error: errorMessage(err) });
    }
  }
}
