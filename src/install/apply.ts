/**
 * Applying an install: the rendered objects are checked all together first (kinds served, names,
 * then a server-side dry-run of each), so bad values apply nothing; then applied with server-side
 * apply (field manager `meshctl`, conflicts forced as istioctl does) in dependency order, waiting
 * for CRDs to be Established and, unless told not to, for workloads to roll out before the webhook
 * configurations go in; then what the revision's inventory holds and the values no longer render is
 * pruned. Every object's before and after are compared, so the report says what really changed.
 */
import { changedFields } from './diff.js';
import { COMPONENT_LABEL, componentOf, inventoryLabels, listInventory, type InventoryScope } from './inventory.js';
import { KubeApiError, objectPath, type KubeClient, type ResourceInfo } from '../kube/index.js';
import { describeRef, groupOf, identityOf, refOfServerObject, type InstallObject, type ObjectRef } from './objects.js';
import { inApplyOrder, PHASES, phaseOf } from './order.js';
import type { Progress } from './progress.js';
import { formatGoDurationMs } from '../util/duration.js';
import { hasReadiness, readinessOf, type Readiness } from './wait.js';
import type { KubeJsonObject } from '../config/sources/kube/index.js';
import { type ErrorCode, errorCodeOf, MeshError } from '../util/errors.js';

export const FIELD_MANAGER = 'meshctl';
const NOT_PRUNED_LABEL = 'install.operator.istio.io/owning-resource-not-pruned';

export type ChangeAction = 'created' | 'configured' | 'unchanged' | 'pruned' | 'removed';

export interface ObjectChange {
  readonly ref: ObjectRef;
  readonly action: ChangeAction;
  /** For `configured`: the fields whose values changed. */
  readonly fields: readonly string[];
}

export interface ApplyOptions {
  /** `--revision`; undefined or '' is the default revision. */
  readonly revision?: string;
  /** The Istio system namespace: namespaced objects that name none go there; created when missing, as istioctl does. */
  readonly systemNamespace: string;
  /** Wait for workloads to roll out before applying webhooks (CRDs are always waited on). */
  readonly wait: boolean;
  readonly readinessTimeoutMs: number;
  readonly progress?: Progress;
  /** Between readiness polls (default 500 ms). */
  readonly pollIntervalMs?: number;
}

/** Bad objects found before anything was applied: every problem, each naming its object. */
export class InstallValidationError extends MeshError {
  constructor(readonly problems: readonly string[]) {
    super(
      'INVALID_ARGUMENT',
      `${problems.length === 1 ? 'an object is' : `${problems.length} objects are`} not valid; nothing was applied:\n${problems.map((p) => `  ${p}`).join('\n')}`,
    );
    this.name = 'InstallValidationError';
  }
}

/** A step of the install failed; the changes made before it are in `changes`. */
export class InstallApplyError extends MeshError {
  constructor(
    message: string,
    readonly changes: readonly ObjectChange[],
    code: ErrorCode = 'INTERNAL',
  ) {
    super(code, message);
    this.name = 'InstallApplyError';
  }
}

interface Prepared {
  readonly body: KubeJsonObject;
  readonly ref: ObjectRef;
  readonly title: string;
  info: ResourceInfo | undefined;
}

const applyQuery = (dryRun: boolean): string => `?fieldManager=${FIELD_MANAGER}&force=true${dryRun ? '&dryRun=All' : ''}`;

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Kinds defined by CRDs of this install: `group|kind` → namespaced. */
function crdKinds(objects: readonly InstallObject[]): Map<string, boolean> {
  const kinds = new Map<string, boolean>();
  for (const o of objects) {
    if (o.object.kind !== 'CustomResourceDefinition') continue;
    const spec = (o.object.spec ?? {}) as { group?: string; scope?: string; names?: { kind?: string } };
    if (spec.group && spec.names?.kind) kinds.set(`${spec.group}|${spec.names.kind}`, spec.scope !== 'Cluster');
  }
  return kinds;
}

/** Local checks and kind resolution; the labelled bodies to apply. Throws InstallValidationError listing every problem. */
async function prepare(rest: KubeClient, objects: readonly InstallObject[], opts: ApplyOptions): Promise<Prepared[]> {
  const problems: string[] = [];
  const fromCrds = crdKinds(objects);
  const seen = new Map<string, string>();
  const prepared: Prepared[] = [];
  for (const o of objects) {
    const { apiVersion, kind, metadata } = o.object;
    const where = o.template;
    if (typeof apiVersion !== 'string' || apiVersion === '' || typeof kind !== 'string' || kind === '') {
      problems.push(`${where}: an object without apiVersion or kind`);
      continue;
    }
    if (typeof metadata?.name !== 'string' || metadata.name === '') {
      problems.push(`${where}: ${kind} without metadata.name`);
      continue;
    }
    const info = await rest.resolve(apiVersion, kind);
    const namespaced = info?.namespaced ?? fromCrds.get(`${groupOf(apiVersion)}|${kind}`);
    if (namespaced === undefined) {
      problems.push(
        `${where}: ${kind} ${metadata.name}: the API server serves no kind ${kind} in ${apiVersion}, and no CRD of this install defines it`,
      );
      continue;
    }
    const { namespace: _ns, ...otherMetadata } = metadata;
    const namespace = namespaced ? (metadata.namespace ?? opts.systemNamespace) : undefined;
    const ref: ObjectRef = { apiVersion, kind, name: metadata.name, ...(namespace !== undefined ? { namespace } : {}) };
    const id = identityOf(ref);
    const earlier = seen.get(id);
    if (earlier !== undefined) {
      problems.push(`${where}: ${describeRef(ref)} is rendered twice (also by ${earlier})`);
      continue;
    }
    seen.set(id, where);
    const labels = { ...(metadata.labels ?? {}), ...inventoryLabels(o, opts.revision, opts.systemNamespace) };
    const body: KubeJsonObject = { ...o.object, metadata: { ...otherMetadata, ...(namespace !== undefined ? { namespace } : {}), labels } };
    prepared.push({ body, ref, title: componentOf(o).title, info });
  }
  if (problems.length > 0) throw new InstallValidationError(problems);
  return prepared;
}

/** Creates the system namespace when it does not exist (istioctl does the same before installing). */
async function ensureNamespace(rest: KubeClient, name: string): Promise<void> {
  if (await rest.getOrUndefined(`/api/v1/namespaces/${encodeURIComponent(name)}`)) return;
  try {
    await rest.call('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 409))
      throw new MeshError(errorCodeOf(err), `creating namespace ${name}: ${errorText(err)}`, { cause: err });
  }
}

/**
 * A server-side dry-run of every object the server can check now (its kind served, its namespace
 * existing): the API server's own validation, before anything is written.
 */
async function dryRun(rest: KubeClient, prepared: readonly Prepared[]): Promise<void> {
  const namespaces = new Map<string, Promise<boolean>>();
  const exists = (ns: string): Promise<boolean> => {
    let p = namespaces.get(ns);
    if (!p) {
      p = rest.getOrUndefined(`/api/v1/namespaces/${encodeURIComponent(ns)}`).then((n) => n !== undefined);
      namespaces.set(ns, p);
    }
    return p;
  };
  const results = await Promise.all(
    prepared.map(async (p) => {
      if (!p.info) return undefined;
      if (p.ref.namespace !== undefined && !(await exists(p.ref.namespace))) return undefined;
      try {
        await rest.call(
          'PATCH',
          objectPath(p.info, p.ref.name, p.ref.namespace) + applyQuery(true),
          p.body,
          'application/apply-patch+yaml',
        );
        return undefined;
      } catch (err) {
        return `${describeRef(p.ref)}: ${errorText(err)}`;
      }
    }),
  );
  const problems = results.filter((r): r is string => r !== undefined);
  if (problems.length > 0) throw new InstallValidationError(problems);
}

/** Polls until every object is ready or the deadline passes; throws naming the objects not ready and why. */
async function waitReady(rest: KubeClient, items: readonly Prepared[], opts: ApplyOptions, timeoutMs: number, hint: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let waiting = items.filter((p) => hasReadiness(p.ref.kind));
  const reasons = new Map<Prepared, Readiness>();
  while (waiting.length > 0) {
    await Promise.all(
      waiting.map(async (p) => {
        const obj = p.info ? await rest.getOrUndefined(objectPath(p.info, p.ref.name, p.ref.namespace)) : undefined;
        const r: Readiness = obj ? readinessOf(obj) : { ready: false, reason: 'not found' };
        reasons.set(p, r);
        if (!r.ready) opts.progress?.waiting(p.title, p.ref, r.reason);
      }),
    );
    waiting = waiting.filter((p) => reasons.get(p)?.ready !== true);
    if (waiting.length === 0) return;
    if (Date.now() >= deadline) {
      const why = waiting.map((p) => {
        const r = reasons.get(p);
        return `${describeRef(p.ref)}: ${r && !r.ready ? r.reason : 'not ready'}`;
      });
      throw new MeshError('DEADLINE_EXCEEDED', `timed out after ${formatGoDurationMs(timeoutMs)} waiting for ${why.join('; ')}${hint}`);
    }
    await new Promise((r) => setTimeout(r, opts.pollIntervalMs ?? 500));
  }
}

/** Applies one object and compares the server's object before and after. */
async function applyOne(rest: KubeClient, p: Prepared): Promise<ObjectChange> {
  try {
    // Kinds of this install's CRDs are served only now.
    p.info ??= await rest.resolve(p.ref.apiVersion, p.ref.kind);
    if (!p.info) throw new MeshError('NOT_FOUND', `the API server does not serve ${p.ref.kind} in ${p.ref.apiVersion}`);
    const path = objectPath(p.info, p.ref.name, p.ref.namespace);
    const before = await rest.getOrUndefined(path);
    const after = await rest.call('PATCH', path + applyQuery(false), p.body, 'application/apply-patch+yaml');
    if (!before) return { ref: p.ref, action: 'created', fields: [] };
    const fields = changedFields(before, after);
    return { ref: p.ref, action: fields.length > 0 ? 'configured' : 'unchanged', fields };
  } catch (err) {
    throw new MeshError(errorCodeOf(err), `${describeRef(p.ref)}: ${errorText(err)}`, { cause: err });
  }
}

/** Deletes one object (background propagation: the API server returns at once, dependents go later); gone already is fine. */
async function deleteObject(rest: KubeClient, info: ResourceInfo, obj: KubeJsonObject): Promise<void> {
  const ref = refOfServerObject(obj);
  try {
    await rest.call('DELETE', objectPath(info, ref.name, ref.namespace), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
    });
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return;
    throw new MeshError(errorCodeOf(err), `deleting ${describeRef(ref)}: ${errorText(err)}`, { cause: err });
  }
}

/** Deletes in reverse dependency order, one phase at a time, the objects of a phase together. */
async function deleteAll(rest: KubeClient, objects: readonly KubeJsonObject[], action: 'pruned' | 'removed'): Promise<ObjectChange[]> {
  const changes: ObjectChange[] = [];
  for (const phase of [...PHASES].reverse()) {
    const batch = objects.filter((o) => phaseOf(o.kind ?? '') === phase);
    const done = await Promise.all(
      batch.map(async (obj): Promise<ObjectChange | undefined> => {
        const ref = refOfServerObject(obj);
        const info = await rest.resolve(ref.apiVersion, ref.kind);
        if (!info) return undefined;
        await deleteObject(rest, info, obj);
        return { ref, action, fields: [] };
      }),
    );
    changes.push(...done.filter((c): c is ObjectChange => c !== undefined));
  }
  return changes;
}

/**
 * Applies an install (install and upgrade alike): validate everything, apply in dependency order
 * with waits, prune what the revision's inventory holds that was not applied now. CRDs are never
 * pruned (that would delete every custom resource of theirs); only `uninstall --purge` removes them.
 */
export async function applyInstall(rest: KubeClient, objects: readonly InstallObject[], opts: ApplyOptions): Promise<ObjectChange[]> {
  const prepared = await prepare(rest, objects, opts);
  await ensureNamespace(rest, opts.systemNamespace);
  await dryRun(rest, prepared);

  const counts = new Map<string, number>();
  for (const p of prepared) counts.set(p.title, (counts.get(p.title) ?? 0) + 1);
  opts.progress?.plan(counts);

  const changes: ObjectChange[] = [];
  const ordered = inApplyOrder(prepared, (p) => p.ref.kind);
  for (const phase of PHASES) {
    const batch = ordered.filter((p) => phaseOf(p.ref.kind) === phase);
    // The objects of one phase do not depend on each other: applied together, reported in render order.
    const results = await Promise.allSettled(batch.map((p) => applyOne(rest, p)));
    for (const r of results) if (r.status === 'fulfilled') changes.push(r.value);
    const failed = results.findIndex((r) => r.status === 'rejected');
    if (failed >= 0) {
      const reason = errorText((results[failed] as PromiseRejectedResult).reason);
      opts.progress?.failed(batch[failed]?.title ?? phase, reason);
      throw new InstallApplyError(reason, changes);
    }
    const mustWait = phase === 'crds' || (phase === 'workloads' && opts.wait);
    if (mustWait && batch.length > 0) {
      try {
        await waitReady(
          rest,
          batch,
          opts,
          opts.readinessTimeoutMs,
          phase === 'workloads' ? ' (no nodes or controllers to run them? --wait=false skips this wait)' : '',
        );
      } catch (err) {
        opts.progress?.failed(batch[0]?.title ?? phase, errorText(err));
        throw new InstallApplyError(errorText(err), changes);
      }
    }
    for (const p of batch) opts.progress?.applied(p.title);
  }

  const applied = new Set(prepared.map((p) => identityOf(p.ref)));
  const renderedKinds = prepared.map((p) => ({ apiVersion: p.ref.apiVersion, kind: p.ref.kind }));
  const stale = (await listInventory(rest, { revision: opts.revision }, renderedKinds)).filter(
    (o) =>
      o.kind !== 'CustomResourceDefinition' &&
      !applied.has(identityOf(refOfServerObject(o))) &&
      o.metadata?.labels?.[NOT_PRUNED_LABEL] !== 'true',
  );
  try {
    changes.push(...(await deleteAll(rest, stale, 'pruned')));
  } catch (err) {
    throw new InstallApplyError(`pruning: ${errorText(err)}`, changes);
  }
  return changes;
}

/** The installed objects `scope` selects (CRDs only when `purge`), without deleting anything: what uninstall would remove. */
export async function uninstallPlan(rest: KubeClient, scope: InventoryScope, purge: boolean): Promise<KubeJsonObject[]> {
  const found = await listInventory(rest, scope);
  return found.filter((o) => purge || o.kind !== 'CustomResourceDefinition');
}

/** Removes the objects of an uninstall plan, webhooks first and CRDs last. */
export async function uninstall(rest: KubeClient, plan: readonly KubeJsonObject[]): Promise<ObjectChange[]> {
  return deleteAll(rest, plan, 'removed');
}

/** One object's verify-install outcome. */
export interface VerifyResult {
  readonly ref: ObjectRef;
  readonly component: string;
  readonly problem?: string;
}

/** Checks that every object the values render exists and is ready (Deployments available, CRDs Established, webhooks present). */
export async function verifyInstall(rest: KubeClient, objects: readonly InstallObject[], systemNamespace: string): Promise<VerifyResult[]> {
  return Promise.all(
    objects.map(async (o): Promise<VerifyResult> => {
      const { apiVersion, kind, metadata } = o.object;
      const info = await rest.resolve(apiVersion, kind);
      const namespace = info?.namespaced ? (metadata.namespace ?? systemNamespace) : undefined;
      const ref: ObjectRef = { apiVersion, kind, name: metadata.name, ...(namespace !== undefined ? { namespace } : {}) };
      const component = componentOf(o).label;
      if (!info) return { ref, component, problem: `the API server serves no ${kind} in ${apiVersion} (its CRD is not installed)` };
      const obj = await rest.getOrUndefined(objectPath(info, metadata.name, namespace));
      if (!obj) return { ref, component, problem: 'not found' };
      const r = readinessOf(obj);
      return r.ready ? { ref, component } : { ref, component, problem: r.reason };
    }),
  );
}

/** Whether any object of the revision is installed (upgrade needs an install to upgrade). */
export async function hasInstall(rest: KubeClient, revision: string | undefined): Promise<boolean> {
  return (await listInventory(rest, { revision })).some((o) => o.metadata?.labels?.[COMPONENT_LABEL] !== undefined);
}
