/**
 * Gateway API kinds (gateway.networking.k8s.io) are Kubernetes types, not Istio protos: their spec
 * is kept as a JSON Struct and checked against the `spec` schema of the vendored CRD
 * (manifests/crds/gateway-api, extracted into schemas.json by scripts/gateway-api-schemas.ts).
 */
import { toJson } from '@bufbuild/protobuf';
import { StructSchema, type Struct } from '@bufbuild/protobuf/wkt';
import type { ObjectContext } from '../validation/context.js';
import type { Issues } from '../validation/issues.js';
import schemas from './schemas.json' with { type: 'json' };
import { validateStructural, type StructuralSchema } from './structural-schema.js';

/** Gateway API kinds by the Kubernetes `kind` of the CRD. */
export type GatewayApiCrdKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute' | 'ReferenceGrant';

/** Every served version of a CRD has the same spec schema (the extraction script checks). */
const SCHEMAS = schemas as unknown as Readonly<
  Record<GatewayApiCrdKind, { readonly versions: readonly string[]; readonly spec: StructuralSchema }>
>;

/** Versions the vendored CRD serves, v1 first. */
export function servedVersions(kind: GatewayApiCrdKind): readonly string[] {
  return SCHEMAS[kind].versions;
}

export function crdSpecValidator(kind: GatewayApiCrdKind): (spec: Struct, ctx: ObjectContext, issues: Issues) => void {
  return (spec, _ctx, issues) => validateStructural(SCHEMAS[kind].spec, toJson(StructSchema, spec), 'spec', issues);
}

/** The spec of a stored Gateway API object as plain JSON (for the typed views in types.ts). */
export function specJson<T>(spec: Struct): T {
  return toJson(StructSchema, spec) as T;
}
