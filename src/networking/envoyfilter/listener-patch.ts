import { clone, create, type DescMessage, type Message, type MessageShape, type Registry } from '@bufbuild/protobuf';
import { anyPack, anyUnpack } from '@bufbuild/protobuf/wkt';
import {
  FilterChainSchema,
  FilterSchema,
  ListenerFilterSchema,
  type Filter,
  type FilterChain,
  type ListenerFilter,
} from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import {
  HttpConnectionManagerSchema,
  HttpFilterSchema,
  type HttpConnectionManager,
  type HttpFilter,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { insertAfterFirst, insertBeforeFirst, removeAll, replaceFirst } from './list-ops.js';
import {
  type GatewayPortMap,
  contextMatches,
  filterChainMatches,
  hasHttpFilterMatch,
  hasListenerFilterMatch,
  hasNetworkFilterMatch,
  httpFilterMatches,
  isMerge,
  listenerFilterMatches,
  listenerMatches,
  networkFilterMatches,
} from './match.js';
import { mergeAnyWithAny, mergeMessage } from './proto-merge.js';
import { ApplyTo, Op, PatchContext, type CompiledPatch } from '../../model/index.js';

const HCM = 'envoy.filters.network.http_connection_manager';

/** One patching pass: the proxy's patches, the Any registry, and which EnvoyFilters changed something. */
export interface PatchRun {
  readonly patches: ReadonlyMap<ApplyTo, readonly CompiledPatch[]>;
  readonly registry: Registry;
  /** `namespace/name` of every EnvoyFilter whose patch took effect (named when the result is invalid). */
  readonly touched: Set<string>;
  /** Route configurations inlined in an HCM (sidecar inbound): patched as istiod patches them when built. */
  readonly inlineRoutes?: (hcm: HttpConnectionManager) => void;
  /** A gateway's target port → Service ports (route configuration port matches). */
  readonly portMap?: GatewayPortMap;
}

export const patchesOf = (run: PatchRun, a: ApplyTo): readonly CompiledPatch[] => run.patches.get(a) ?? [];

/** A fresh copy of the patch value (the compiled one is shared by every proxy). */
export function valueOf<D extends DescMessage>(schema: D, p: CompiledPatch): MessageShape<D> {
  return p.value ? clone(schema, p.value as MessageShape<D>) : create(schema);
}

export function mergeValue<D extends DescMessage>(schema: D, dst: MessageShape<D>, p: CompiledPatch): void {
  if (p.value) mergeMessage(schema, dst, p.value as Message as MessageShape<D>, p.operation === Op.MERGE_AND_REPLACE_LIST);
}

/**
 * istiod's ApplyListenerPatches for one context: per listener merges/removes and the patches
 * below it, then (unless `skipAdds`) the LISTENER ADDs. An ADD without a context is only for
 * sidecar outbound and gateways. Listeners are patched in place; removed ones are left out.
 */
export function patchListeners(ctx: PatchContext, run: PatchRun, listeners: Listener[], skipAdds: boolean): Listener[] {
  const out = listeners.filter((l) => patchListener(ctx, run, l));
  if (!skipAdds) {
    for (const p of patchesOf(run, ApplyTo.LISTENER)) {
      if (p.operation !== Op.ADD) continue;
      if (p.context === PatchContext.ANY && ctx !== PatchContext.SIDECAR_OUTBOUND && ctx !== PatchContext.GATEWAY) continue;
      if (!contextMatches(ctx, p)) continue;
      run.touched.add(p.key);
      out.push(valueOf(ListenerSchema, p));
    }
  }
  return out;
}

/** False when a REMOVE took the listener away. */
function patchListener(ctx: PatchContext, run: PatchRun, l: Listener): boolean {
  if (run.inlineRoutes) forEachHcm(l, (hcm) => run.inlineRoutes?.(hcm));
  for (const p of patchesOf(run, ApplyTo.LISTENER)) {
    if (!contextMatches(ctx, p) || !listenerMatches(l, p)) continue;
    if (p.operation === Op.REMOVE) {
      run.touched.add(p.key);
      return false;
    }
    if (isMerge(p.operation)) {
      run.touched.add(p.key);
      mergeValue(ListenerSchema, l, p);
    }
  }
  patchListenerFilters(ctx, run, l);
  patchFilterChains(ctx, run, l);
  return true;
}

/** Applies `f` to every HCM of the listener, packing the result back. */
function forEachHcm(l: Listener, f: (hcm: HttpConnectionManager) => void): void {
  for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
    for (const filter of fc.filters) {
      if (filter.name !== HCM || filter.configType.case !== 'typedConfig') continue;
      const hcm = anyUnpack(filter.configType.value, HttpConnectionManagerSchema);
      if (!hcm || hcm.routeSpecifier.case !== 'routeConfig') continue;
      f(hcm);
      filter.configType = { case: 'typedConfig', value: anyPack(HttpConnectionManagerSchema, hcm) };
    }
  }
}

function patchListenerFilters(ctx: PatchContext, run: PatchRun, l: Listener): void {
  for (const p of patchesOf(run, ApplyTo.LISTENER_FILTER)) {
    if (!contextMatches(ctx, p) || !listenerMatches(l, p)) continue;
    const make = (): ListenerFilter => valueOf(ListenerFilterSchema, p);
    const matches = (f: ListenerFilter): boolean => listenerFilterMatches(f, p);
    if (isMerge(p.operation)) {
      // istiod merges a listener-filter patch into every listener filter of the listener (of the
      // patch's typed_config type; others keep theirs) and never renames one: done the same here.
      if (hasListenerFilterMatch(p) && l.listenerFilters.map((f) => mergeListenerFilter(run, f, p)).some(Boolean)) run.touched.add(p.key);
      continue;
    }
    const applied = applyListOp(p, l.listenerFilters, hasListenerFilterMatch(p), matches, make);
    if (applied) run.touched.add(p.key);
  }
}

/**
 * The list operations of istiod's listener-filter, network-filter and HTTP-filter patches. Without
 * an element match, INSERT_AFTER appends, INSERT_BEFORE prepends, REPLACE/REMOVE do nothing. MERGE
 * is not a list operation: it happens per element (in a later pass for network and HTTP filters).
 */
function applyListOp<T>(p: CompiledPatch, list: T[], hasMatch: boolean, matches: (e: T) => boolean, make: () => T): boolean {
  switch (p.operation) {
    case Op.ADD:
      list.push(make());
      return true;
    case Op.INSERT_FIRST:
      list.unshift(make());
      return true;
    case Op.INSERT_AFTER:
      if (!hasMatch) {
        list.push(make());
        return true;
      }
      return insertAfterFirst(list, matches, make);
    case Op.INSERT_BEFORE:
      if (!hasMatch) {
        list.unshift(make());
        return true;
      }
      return insertBeforeFirst(list, matches, make);
    case Op.REPLACE:
      return hasMatch && replaceFirst(list, matches, make);
    case Op.REMOVE: {
      if (!hasMatch) return false;
      const before = list.length;
      removeAll(list, matches);
      return list.length !== before;
    }
    default:
      return false;
  }
}

/**
 * istiod's mergeListenerFilter: the typed configs merge when of one type; the name stays. A filter
 * of another type makes istiod's proto merge panic, and then none of the listener's patches take
 * effect: the same here, as a thrown error (the listener is sent unpatched and the patch reported).
 */
function mergeListenerFilter(run: PatchRun, f: ListenerFilter, p: CompiledPatch): boolean {
  if (f.configType.case !== 'typedConfig') return false;
  const user = p.value as ListenerFilter | undefined;
  if (user?.configType.case === 'typedConfig') {
    if (user.configType.value.typeUrl !== f.configType.value.typeUrl) {
      throw new Error(
        `LISTENER_FILTER MERGE of ${user.configType.value.typeUrl} meets listener filter ${f.name} of ${f.configType.value.typeUrl}: istiod merges into every listener filter and panics here, so none of the listener's patches apply`,
      );
    }
    const merged = mergeAnyWithAny(f.configType.value, user.configType.value, run.registry);
    if (merged) f.configType = { case: 'typedConfig', value: merged };
  }
  return true;
}

interface TypedNamed {
  name: string;
  configType: { case: 'typedConfig'; value: import('@bufbuild/protobuf/wkt').Any } | { case: string | undefined; value?: unknown };
}

/**
 * istiod's filter MERGE (listener, network and HTTP filters): the patch's name replaces the
 * filter's; its typed_config merges into the filter's when both are the same type (istiod keeps
 * the original config when they are not). A filter without typed_config is left alone.
 */
function mergeTyped<D extends DescMessage>(run: PatchRun, filter: TypedNamed, p: CompiledPatch, schema: D): boolean {
  if (filter.configType.case !== 'typedConfig') return false;
  const user = valueOf(schema, p) as unknown as TypedNamed;
  if (user.name !== '') filter.name = user.name;
  if (user.configType.case === 'typedConfig') {
    const merged = mergeAnyWithAny(filter.configType.value as never, user.configType.value as never, run.registry);
    if (merged) filter.configType = { case: 'typedConfig', value: merged };
  }
  return true;
}

function patchFilterChains(ctx: PatchContext, run: PatchRun, l: Listener): void {
  // As istiod: a chain without filters is dropped (it cannot serve anything), a removed one too.
  l.filterChains = l.filterChains.filter((fc) => fc.filters.length > 0 && patchFilterChain(ctx, run, l, fc));
  const dfc = l.defaultFilterChain;
  if (dfc && dfc.filters.length > 0 && !patchFilterChain(ctx, run, l, dfc)) l.defaultFilterChain = undefined;
  for (const p of patchesOf(run, ApplyTo.FILTER_CHAIN)) {
    if (p.operation !== Op.ADD || !contextMatches(ctx, p) || !listenerMatches(l, p)) continue;
    run.touched.add(p.key);
    l.filterChains.push(valueOf(FilterChainSchema, p));
  }
}

/** False when a REMOVE took the chain away. */
function patchFilterChain(ctx: PatchContext, run: PatchRun, l: Listener, fc: FilterChain): boolean {
  for (const p of patchesOf(run, ApplyTo.FILTER_CHAIN)) {
    if (!contextMatches(ctx, p) || !listenerMatches(l, p) || !filterChainMatches(l, fc, p)) continue;
    if (p.operation === Op.REMOVE) {
      run.touched.add(p.key);
      return false;
    }
    if (!isMerge(p.operation)) continue;
    const merged = mergeTransportSocket(run, fc, p);
    if (merged === 'error') continue;
    run.touched.add(p.key);
    if (!merged) mergeValue(FilterChainSchema, fc, p);
  }
  patchNetworkFilters(ctx, run, l, fc);
  return true;
}

/**
 * istiod's mergeTransportSocketListener: a patch with a transport socket of the chain's socket
 * name merges the typed configs only (true); otherwise the whole chain merges (false).
 */
function mergeTransportSocket(run: PatchRun, fc: FilterChain, p: CompiledPatch): boolean | 'error' {
  const ts = (p.value as FilterChain | undefined)?.transportSocket;
  if (!ts || !fc.transportSocket || ts.name !== fc.transportSocket.name) return false;
  const dst = fc.transportSocket.configType;
  const src = ts.configType;
  if (dst.case === 'typedConfig' && src.case === 'typedConfig') {
    const merged = mergeAnyWithAny(dst.value, src.value, run.registry);
    if (!merged) return 'error';
    fc.transportSocket.configType = { case: 'typedConfig', value: merged };
  }
  return true;
}

function patchNetworkFilters(ctx: PatchContext, run: PatchRun, l: Listener, fc: FilterChain): void {
  for (const p of patchesOf(run, ApplyTo.NETWORK_FILTER)) {
    if (!contextMatches(ctx, p) || !listenerMatches(l, p) || !filterChainMatches(l, fc, p)) continue;
    if (
      applyListOp(
        p,
        fc.filters,
        hasNetworkFilterMatch(p),
        (f) => networkFilterMatches(f, p),
        () => valueOf(FilterSchema, p),
      )
    )
      run.touched.add(p.key);
  }
  for (const filter of fc.filters) patchNetworkFilter(ctx, run, l, fc, filter);
}

function patchNetworkFilter(ctx: PatchContext, run: PatchRun, l: Listener, fc: FilterChain, filter: Filter): void {
  for (const p of patchesOf(run, ApplyTo.NETWORK_FILTER)) {
    if (
      p.operation !== Op.MERGE ||
      !contextMatches(ctx, p) ||
      !listenerMatches(l, p) ||
      !filterChainMatches(l, fc, p) ||
      !networkFilterMatches(filter, p)
    )
      continue;
    if (mergeTyped(run, filter, p, FilterSchema)) run.touched.add(p.key);
  }
  if (filter.name === HCM) patchHttpFilters(ctx, run, l, fc, filter);
}

function patchHttpFilters(ctx: PatchContext, run: PatchRun, l: Listener, fc: FilterChain, filter: Filter): void {
  const patches = patchesOf(run, ApplyTo.HTTP_FILTER);
  if (patches.length === 0) return;
  const typed = filter.configType.case === 'typedConfig' ? filter.configType.value : undefined;
  const hcm = typed ? anyUnpack(typed, HttpConnectionManagerSchema) : create(HttpConnectionManagerSchema);
  if (!hcm) return;
  const applies = (p: CompiledPatch): boolean =>
    contextMatches(ctx, p) && listenerMatches(l, p) && filterChainMatches(l, fc, p) && networkFilterMatches(filter, p);
  for (const p of patches) {
    if (!applies(p)) continue;
    if (
      applyListOp(
        p,
        hcm.httpFilters,
        hasHttpFilterMatch(p),
        (f) => httpFilterMatches(f, p),
        () => valueOf(HttpFilterSchema, p),
      )
    )
      run.touched.add(p.key);
  }
  for (const hf of hcm.httpFilters) {
    for (const p of patches) {
      if (p.operation !== Op.MERGE || !applies(p) || !httpFilterMatches(hf, p)) continue;
      if (mergeTyped(run, hf as HttpFilter, p, HttpFilterSchema)) run.touched.add(p.key);
    }
  }
  if (typed) filter.configType = { case: 'typedConfig', value: anyPack(HttpConnectionManagerSchema, hcm) };
}
