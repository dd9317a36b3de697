/**
 * What each config file contributes, and which file wins an object defined twice. Pure logic,
 * no file system: FileSource feeds it file contents and applies the changes it returns.
 *
 * The last good version keeps serving: a file that does not parse keeps all its objects; an
 * invalid document keeps that object's previous version; only objects that really vanished
 * from a file (or whose file was deleted) are deleted.
 */
import { configKeyString, type Config, type ConfigError, type ConfigOrigin } from '../config.js';
import { boundedErrors, ERROR_BOUNDS } from '../error-bounds.js';
import { atFieldLines, parseConfigFile, type ParseOptions } from '../parse.js';
import type { ConfigChange } from '../store-types.js';
import { readKey, validateObject, type ValidateOptions } from '../validation/index.js';
import { compareIds } from '../../util/order.js';

/** One file's contribution: its objects by `Kind/ns/name`, and its own errors. */
export interface FileState {
  readonly objects: ReadonlyMap<string, Config>;
  readonly errors: readonly ConfigError[];
}

export interface LoadOptions extends ParseOptions, ValidateOptions {}

/**
 * Parses and validates a file's text. `previous` is what the file contributed before, whose
 * objects survive where the new text is broken. The errors kept are bounded (ERROR_BOUNDS): they
 * live as long as the file stays broken, and must not hold on to its text.
 */
export function loadFileState(text: string, file: string, previous: FileState | undefined, opts: LoadOptions = {}): FileState {
  const parsed = parseConfigFile(text, file, opts);
  if (!parsed.ok) return { objects: previous?.objects ?? new Map(), errors: boundedErrors(parsed.errors, ERROR_BOUNDS.maxErrorsPerUnit) };

  const objects = new Map<string, Config>();
  const errors: ConfigError[] = [...parsed.value.errors];
  // Kinds of invalid documents we could not identify: any vanished object of such a kind may be
  // the one that document meant, so it is kept rather than deleted ('*' = any kind).
  const unidentified = new Set<string>();
  if (parsed.value.errors.length > 0) unidentified.add('*');
  const firstLine = new Map<string, number | undefined>();

  for (const doc of parsed.value.documents) {
    const r = validateObject(doc.object, doc.origin, opts);
    if (r.ok) {
      const ks = configKeyString(r.value.meta);
      if (objects.has(ks) && firstLine.has(ks)) {
        errors.push({
          origin: doc.origin,
          kind: r.value.meta.kind,
          namespace: r.value.meta.namespace,
          name: r.value.meta.name,
          message: `defined twice in this file (first at line ${firstLine.get(ks) ?? '?'}); the first definition is used`,
        });
        continue;
      }
      objects.set(ks, r.value);
      firstLine.set(ks, doc.origin.line);
      continue;
    }
    errors.push(...atFieldLines(r.errors, doc));
    const key = readKey(doc.object, opts);
    if (!key) {
      unidentified.add(typeof doc.object.kind === 'string' ? doc.object.kind : '*');
      continue;
    }
    const ks = configKeyString(key);
    const old = previous?.objects.get(ks);
    if (old && !objects.has(ks)) objects.set(ks, old);
  }

  if (unidentified.size > 0 && previous) {
    for (const [ks, old] of previous.objects) {
      if (!objects.has(ks) && (unidentified.has('*') || unidentified.has(old.meta.kind))) objects.set(ks, old);
    }
  }
  return { objects, errors: boundedErrors(errors, ERROR_BOUNDS.maxErrorsPerUnit) };
}

/** One object defined in more than one file. */
export interface DuplicateObject {
  readonly used: Config;
  readonly usedOrigin: ConfigOrigin;
  readonly ignored: readonly { readonly config: Config; readonly origin: ConfigOrigin }[];
}

/** `file:line` (or the file alone). */
export const formatOrigin = (o: ConfigOrigin): string => (o.line !== undefined ? `${o.file}:${o.line}` : o.file);

/** Files by a sortable id (path relative to the root, `/`-separated); the first file in order wins. */
export class FileTracker {
  readonly #files = new Map<string, FileState>();
  /** Claimants of each object, sorted by file id. */
  readonly #claims = new Map<string, string[]>();
  /** What was last handed to the sink, per object. */
  readonly #applied = new Map<string, Config>();
  /** Objects claimed by more than one file. */
  readonly #conflicts = new Set<string>();

  files(): IterableIterator<string> {
    return this.#files.keys();
  }

  state(file: string): FileState | undefined {
    return this.#files.get(file);
  }

  /** Replaces a file's contribution (`undefined` = the file is gone) and returns the resulting changes. */
  set(file: string, next: FileState | undefined): ConfigChange[] {
    const prev = this.#files.get(file);
    if (next) this.#files.set(file, next);
    else this.#files.delete(file);

    const touched = new Set<string>([...(prev?.objects.keys() ?? []), ...(next?.objects.keys() ?? [])]);
    const changes: ConfigChange[] = [];
    for (const ks of touched) {
      this.#updateClaim(ks, file, next?.objects.has(ks) ?? false);
      const winner = this.#claims.get(ks)?.[0];
      const desired = winner !== undefined ? this.#files.get(winner)?.objects.get(ks) : undefined;
      const current = this.#applied.get(ks);
      if (desired === current) continue;
      if (desired) {
        this.#applied.set(ks, desired);
        // Same content (a re-read, or a move to another file): nothing to tell the store.
        if (current?.meta.resourceVersion !== desired.meta.resourceVersion) changes.push({ type: 'upsert', config: desired });
      } else if (current) {
        this.#applied.delete(ks);
        changes.push({ type: 'delete', key: { kind: current.meta.kind, namespace: current.meta.namespace, name: current.meta.name } });
      }
    }
    return changes;
  }

  /** Objects that more than one file defines: the definition used (the first file in order) and the ignored ones. */
  conflicts(): DuplicateObject[] {
    const out: DuplicateObject[] = [];
    for (const ks of this.#conflicts) {
      const [winner, ...losers] = this.#claims.get(ks) ?? [];
      const used = winner !== undefined ? this.#files.get(winner)?.objects.get(ks) : undefined;
      if (!used || winner === undefined) continue;
      const ignored: { config: Config; origin: ConfigOrigin }[] = [];
      for (const loser of losers) {
        const config = this.#files.get(loser)?.objects.get(ks);
        if (config) ignored.push({ config, origin: config.meta.origin ?? { file: loser } });
      }
      if (ignored.length > 0) out.push({ used, usedOrigin: used.meta.origin ?? { file: winner }, ignored });
    }
    return out;
  }

  /** Every file's own errors, plus one per object a later file defines again. */
  errors(): ConfigError[] {
    const out: ConfigError[] = [];
    for (const state of this.#files.values()) out.push(...state.errors);
    for (const d of this.conflicts()) {
      const at = formatOrigin(d.usedOrigin);
      for (const { config, origin } of d.ignored) {
        out.push({
          origin,
          kind: config.meta.kind,
          namespace: config.meta.namespace,
          name: config.meta.name,
          message: `also defined in ${at}, which comes first and is used; this definition in ${origin.file} is ignored`,
        });
      }
    }
    return out;
  }

  #updateClaim(ks: string, file: string, claims: boolean): void {
    let list = this.#claims.get(ks);
    const at = list?.indexOf(file) ?? -1;
    if (claims && at < 0) {
      list ??= [];
      list.push(file);
      list.sort(compareIds);
      this.#claims.set(ks, list);
    } else if (!claims && list && at >= 0) {
      list.splice(at, 1);
      if (list.length === 0) this.#claims.delete(ks);
    }
    if ((this.#claims.get(ks)?.length ?? 0) > 1) this.#conflicts.add(ks);
    else this.#conflicts.delete(ks);
  }
}
