/**
 * Extracts the `spec` OpenAPI v3 schema of each served version of the vendored Gateway API CRDs
 * (manifests/crds/gateway-api) into src/config/gateway-api/schemas.json.
 * Run after re-vendoring: `npx tsx scripts/gateway-api-schemas.ts`.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const CRD_DIR = 'manifests/crds/gateway-api';
const OUT = 'src/config/gateway-api/schemas.json';

interface CrdVersion {
  name: string;
  served: boolean;
  schema?: { openAPIV3Schema?: { properties?: { spec?: unknown } } };
}
interface Crd {
  spec: { names: { kind: string }; versions: CrdVersion[] };
}

/** kind → the versions the CRD serves and their one spec schema (meshpilot reads every version alike). */
/** Descriptions are documentation, not rules: left out to keep the file small. */
const dropDescriptions = (k: string, v: unknown): unknown => (k === 'description' && typeof v === 'string' ? undefined : v);

const out: Record<string, { versions: string[]; spec: unknown }> = {};
for (const file of readdirSync(CRD_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort()) {
  const crd = parse(readFileSync(join(CRD_DIR, file), 'utf8')) as Crd;
  const served = crd.spec.versions.filter((v) => v.served && v.schema?.openAPIV3Schema?.properties?.spec);
  const specs = served.map((v) => JSON.stringify(v.schema?.openAPIV3Schema?.properties?.spec));
  if (specs.some((s) => s !== specs[0]))
    throw new Error(`${file}: served versions differ in their spec schema; meshpilot validates every version with one schema`);
  // v1 first: the version meshpilot prints.
  const versions = served.map((v) => v.name).sort((a, b) => (a === 'v1' ? -1 : b === 'v1' ? 1 : b.localeCompare(a)));
  out[crd.spec.names.kind] = { versions, spec: JSON.parse(specs[0] ?? '{}', dropDescriptions) };
}
writeFileSync(OUT, `${JSON.stringify(out)}\n`);
console.log(
  `wrote ${OUT}: ${Object.entries(out)
    .map(([k, v]) => `${k} ${v.versions.join('/')}`)
    .join(', ')}`,
);
