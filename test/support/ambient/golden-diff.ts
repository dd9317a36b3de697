/**
 * Whole-resource comparison of a control plane's ambient output with istiod's golden: both sides
 * as `Resource`s (type, xDS name, proto3 JSON), the NORMALISED fields rewritten on both, every
 * leaf compared (test/scenarios/whole/leaves.ts), the ACCEPTED differences taken out, and what
 * remains written as a per-resource diff a person can read (IP bytes decoded beside their base64).
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { compareResources, type LeafDiff, type Resource } from '../../scenarios/whole/leaves.js';
import { ACCEPTED, explains, NORMALISED, type AcceptedDifference } from './differences.js';
import type { NamedResource } from './delta-capture.js';

/** Sections of a golden document → the type name the comparison (and ACCEPTED) uses. */
export const WDS_SECTIONS = { addresses: 'address', authorizations: 'authorization' } as const;
export const WAYPOINT_SECTIONS = { listeners: 'listener', routes: 'route', clusters: 'cluster', endpoints: 'endpoint' } as const;

/** `resource` with every NORMALISED rewrite for its `type name` applied (idempotent). */
export function normalised(type: string, name: string, resource: JsonValue): JsonValue {
  let json = resource;
  for (const n of NORMALISED) if (n.resource.test(`${type} ${name}`)) json = n.apply(json);
  return json;
}

/** A golden document's sections with the NORMALISED fields rewritten: what the capture writes, so a recapture does not churn them. */
export function normaliseSections<D extends object>(doc: D, sections: Readonly<Record<string, string>>): D {
  const out = { ...doc } as Record<string, unknown>;
  for (const [section, type] of Object.entries(sections)) {
    const list = out[section] as NamedResource[] | undefined;
    if (list) out[section] = list.map((r) => ({ name: r.name, resource: normalised(type, r.name, r.resource) }));
  }
  return out as unknown as D;
}

/** The resources of a document's sections, normalised. */
export function resourcesOf(doc: JsonObject, sections: Readonly<Record<string, string>>): Resource[] {
  const out: Resource[] = [];
  for (const [section, type] of Object.entries(sections)) {
    const list = doc[section];
    if (!Array.isArray(list)) throw new Error(`golden document has no "${section}" list`);
    for (const item of list as unknown as NamedResource[]) {
      out.push({ type, name: item.name, json: normalised(type, item.name, item.resource) });
    }
  }
  return out;
}

export interface GoldenResult {
  /** Differences no ACCEPTED entry explains. */
  readonly unexplained: LeafDiff[];
  /** ACCEPTED entries of this view that explained nothing (stale: remove them). */
  readonly unusedAccepted: AcceptedDifference[];
  readonly resources: number;
  readonly equalResources: number;
}

export function compareWithGolden(view: 'ztunnel' | 'waypoint', istiod: readonly Resource[], actual: readonly Resource[]): GoldenResult {
  const c = compareResources(istiod, actual);
  const used = new Set<AcceptedDifference>();
  const unexplained: LeafDiff[] = [];
  for (const d of c.diffs) {
    const a = ACCEPTED.find((x) => explains(x, view, d));
    if (a) used.add(a);
    else unexplained.push(d);
  }
  return {
    unexplained,
    unusedAccepted: ACCEPTED.filter((a) => a.view === view && !used.has(a)),
    resources: c.resources,
    equalResources: c.equalResources,
  };
}

/** `"CvQBCg=="` → ` (10.244.1.10)` when a leaf is base64 of an IPv4 or IPv6 address. */
function decodedIp(path: string, value: string | undefined): string {
  if (value === undefined || !/(^|\.)(addresses|address|sourceIps|notSourceIps|destinationIps|notDestinationIps)\b/.test(path)) return '';
  let s: unknown;
  try {
    s = JSON.parse(value);
  } catch {
    return '';
  }
  if (typeof s !== 'string' || !/^[A-Za-z0-9+/]+=*$/.test(s)) return '';
  const b = Buffer.from(s, 'base64');
  if (b.length === 4) return ` (${[...b].join('.')})`;
  if (b.length === 16) return ` (${[...Array(8).keys()].map((i) => b.readUInt16BE(i * 2).toString(16)).join(':')})`;
  return '';
}

/** Lines of diff shown (AMBIENT_GOLDEN_MAX_LINES raises it when working through a long diff). */
const MAX_LINES = Number(process.env.AMBIENT_GOLDEN_MAX_LINES ?? 400);

/**
 * The unexplained differences, one block per resource: a resource on one side only is shown whole
 * (its JSON, cut at 1,500 characters), a shared one as `path: istiod … | <name> …` lines.
 */
export function formatDiffs(result: GoldenResult, istiod: readonly Resource[], actual: readonly Resource[], actualName: string): string {
  const byKey = (rs: readonly Resource[]): Map<string, Resource> => new Map(rs.map((r) => [`${r.type} ${r.name}`, r]));
  const mine = byKey(actual);
  const theirs = byKey(istiod);
  const groups = new Map<string, LeafDiff[]>();
  for (const d of result.unexplained) {
    const k = `${d.type} ${d.name}`;
    groups.set(k, [...(groups.get(k) ?? []), d]);
  }
  const lines: string[] = [
    `${groups.size} of ${result.resources} resources differ from istiod (${result.equalResources} equal); ${result.unexplained.length} differences:`,
  ];
  for (const [k, ds] of groups) {
    const whole = ds.find((d) => d.path === '');
    if (whole) {
      const side = whole.istiod === undefined ? actualName : 'istiod';
      const r = (whole.istiod === undefined ? mine : theirs).get(k);
      const json = JSON.stringify(r?.json);
      lines.push(`- ${k}: only in ${side}`, `    ${json.length > 1500 ? `${json.slice(0, 1500)}…` : json}`);
      continue;
    }
    lines.push(`- ${k}: ${ds.length} field${ds.length === 1 ? '' : 's'} differ`);
    for (const d of ds)
      lines.push(
        `    ${d.path}: istiod ${d.istiod ?? '(absent)'}${decodedIp(d.path, d.istiod)} | ${actualName} ${d.meshpilot ?? '(absent)'}${decodedIp(d.path, d.meshpilot)}`,
      );
  }
  for (const a of result.unusedAccepted) lines.push(`- ACCEPTED entry ${a.id} explains no difference any more: remove it`);
  return lines.length > MAX_LINES
    ? [...lines.slice(0, MAX_LINES), `… ${lines.length - MAX_LINES} more lines`].join('\n')
    : lines.join('\n');
}
