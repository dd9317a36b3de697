/**
 * Reads `meshctl analyze` inputs (files, directories, `-`) into a Snapshot with the server's own
 * parser and validator (src/config/parse.ts, validate-object.ts), as the FileSource does.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  configKeyString,
  type Config,
  type ConfigError,
  type ConfigOrigin,
  atFieldLines,
  parseConfigFile,
  formatOrigin,
  readKey,
  salvageObject,
  validateObjectWithWarnings,
  boundedErrors,
  ERROR_BOUNDS,
  DEFAULT_PARSE_LIMITS,
  fileTooLargeMessage,
} from '../../config/index.js';
import { emptyCoreObjects, readCoreObjects } from './core-objects.js';
import { FieldLines } from './field-lines.js';
import { refOf, type InvalidObject, type ObjectWarnings, type Snapshot } from './model.js';
import { DEFAULT_DOMAIN_SUFFIX } from '../../config/constants.js';
import { MeshError } from '../../util/errors.js';
import { addDefaultResources } from './default-resources.js';
import { defaultAnalysisMeshConfig, parseMeshConfigFile, parseMeshNetworksFile } from './mesh-files.js';

const CONFIG_EXT = /\.(ya?ml|json)$/i;

export interface LoadInput {
  readonly args: readonly string[];
  readonly recursive: boolean;
  readonly defaultNamespace: string;
  readonly cwd: string;
  readonly rootNamespace: string;
  readonly readStdin?: () => Promise<string>;
  /** istioctl's --meshConfigFile and --meshNetworksFile. */
  readonly meshConfigFile?: string;
  readonly meshNetworksFile?: string;
  /** Add istioctl's stand-ins for a default install (files-only analysis): see default-resources.ts. */
  readonly defaultResources?: boolean;
}

export interface LoadResult {
  readonly snapshot: Snapshot;
  /** Files that could not be read or parsed at all: analyze exits 65 naming them. */
  readonly parseErrors: readonly ConfigError[];
}

/** The files an argument stands for: itself, or a directory's config files (all levels with -R). */
export async function expand(arg: string, cwd: string, recursive: boolean): Promise<string[]> {
  const abs = path.resolve(cwd, arg);
  const st = await stat(abs);
  if (!st.isDirectory()) return [arg];
  const out: string[] = [];
  const entries = (await readdir(abs, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const rel = path.join(arg, e.name);
    if (e.isDirectory()) {
      if (recursive) out.push(...(await expand(rel, cwd, true)));
    } else if (CONFIG_EXT.test(e.name)) out.push(rel);
  }
  return out;
}

export async function loadInputs(input: LoadInput): Promise<LoadResult> {
  const configs: Config[] = [];
  const invalid: InvalidObject[] = [];
  const objectWarnings: ObjectWarnings[] = [];
  const core = emptyCoreObjects();
  const parseErrors: ConfigError[] = [];
  const lines = new FieldLines();
  const opts = { defaultNamespace: input.defaultNamespace };
  /** Where each object was first defined: a later definition is an error (the server uses the first). */
  const firstDefined = new Map<string, ConfigOrigin>();

  const files: string[] = [];
  for (const arg of input.args) {
    if (arg === '-') files.push('-');
    else {
      try {
        files.push(...(await expand(arg, input.cwd, input.recursive)));
      } catch {
        parseErrors.push({ origin: { file: arg }, message: 'no such file or directory' });
      }
    }
  }

  for (const file of files) {
    let text: string;
    try {
      if (file === '-') {
        if (!input.readStdin) throw new MeshError('INVALID_ARGUMENT', 'stdin is not available');
        text = await input.readStdin();
      } else {
        // A file over the limit is refused before it is read, as the config directory does.
        const abs = path.resolve(input.cwd, file);
        const { size } = await stat(abs);
        if (size > DEFAULT_PARSE_LIMITS.maxFileBytes) {
          parseErrors.push({ origin: { file }, message: fileTooLargeMessage(size, DEFAULT_PARSE_LIMITS) });
          continue;
        }
        text = await readFile(abs, 'utf8');
      }
    } catch (err) {
      parseErrors.push({ origin: { file }, message: err instanceof Error ? err.message : String(err) });
      continue;
    }
    const name = file === '-' ? 'stdin.yaml' : file;
    const parsed = parseConfigFile(text, name);
    if (!parsed.ok) {
      parseErrors.push(...boundedErrors(parsed.errors, ERROR_BOUNDS.maxErrorsPerUnit));
      continue;
    }
    parseErrors.push(...parsed.value.errors);
    for (const doc of parsed.value.documents) {
      const { result: r, warnings } = validateObjectWithWarnings(doc.object, doc.origin, opts);
      if (r.ok) {
        const m = r.value.meta;
        const ks = configKeyString(m);
        const first = firstDefined.get(ks);
        if (first === undefined) {
          firstDefined.set(ks, doc.origin);
          configs.push(r.value);
          if (warnings.length > 0) objectWarnings.push({ ref: refOf(r.value), warnings: atFieldLines(warnings, doc) });
          continue;
        }
        const error: ConfigError = {
          origin: doc.origin,
          kind: m.kind,
          namespace: m.namespace,
          name: m.name,
          path: 'metadata.name',
          message: `already defined at ${formatOrigin(first)}; this later definition is ignored`,
        };
        invalid.push({
          ref: { kind: m.kind, namespace: m.namespace, name: m.name, origin: doc.origin },
          errors: atFieldLines([error], doc),
        });
        continue;
      }
      const key = readKey(doc.object, opts);
      const kind = typeof doc.object.kind === 'string' ? doc.object.kind : 'Unknown';
      const ref = { kind, namespace: key?.namespace ?? input.defaultNamespace, name: key?.name ?? '', origin: doc.origin };
      // istioctl reports a rejected object's warnings beside its errors.
      if (warnings.length > 0)
        objectWarnings.push({ ref, warnings: boundedErrors(atFieldLines(warnings, doc), ERROR_BOUNDS.maxErrorsPerUnit) });
      invalid.push({
        ref,
        // Bounded as the server bounds them: a hostile file's errors are read, not scrolled past.
        errors: boundedErrors(atFieldLines(r.errors, doc), ERROR_BOUNDS.maxErrorsPerUnit),
      });
      // As istioctl: the object is reported (IST0106) and still analyzed as far as it can be read.
      const salvaged = salvageObject(doc.object, doc.origin, opts);
      if (salvaged !== undefined && !firstDefined.has(configKeyString(salvaged.meta))) {
        firstDefined.set(configKeyString(salvaged.meta), doc.origin);
        configs.push(salvaged);
      }
    }
    lines.add(name, parsed.value.trees);
    readCoreObjects(core, parsed.value, name, input.defaultNamespace);
  }
  // A bad mesh file stops the analysis: what it says changes every answer (istioctl fails too).
  const readMeshFile = (f: string): Promise<string> => readFile(path.resolve(input.cwd, f), 'utf8');
  const meshConfig =
    input.meshConfigFile !== undefined
      ? parseMeshConfigFile(await readMeshFile(input.meshConfigFile), input.meshConfigFile)
      : defaultAnalysisMeshConfig();
  const meshNetworks =
    input.meshNetworksFile !== undefined
      ? parseMeshNetworksFile(await readMeshFile(input.meshNetworksFile), input.meshNetworksFile, input.rootNamespace)
      : undefined;
  if (input.defaultResources === true) addDefaultResources(core, meshConfig, input.rootNamespace);
  const { invalid: coreInvalid, warnings: coreWarnings, ...objects } = core;
  // Kinds read beside the served ones (EnvoyFilter, Telemetry): their errors at the field's line too.
  const extraInvalid = coreInvalid.map((o) => ({
    ...o,
    errors: o.errors.map((e) => {
      const line = e.path !== undefined ? lines.lineOf(o.ref, e.path) : undefined;
      return line !== undefined ? { ...e, origin: { ...e.origin, line } } : e;
    }),
  }));
  return {
    snapshot: {
      meshConfig,
      ...(meshNetworks ? { meshNetworks } : {}),
      configs,
      invalid: [...invalid, ...extraInvalid],
      warnings: [...objectWarnings, ...coreWarnings],
      ...objects,
      remoteClusters: [],
      rootNamespace: input.rootNamespace,
      domain: DEFAULT_DOMAIN_SUFFIX,
      lineOf: (r, p) => lines.lineOf(r, p),
    },
    parseErrors,
  };
}
