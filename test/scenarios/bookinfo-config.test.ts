/**
 * The bookinfo scenario's generated config, held to Envoy's protos: every resource of every
 * proxy decodes, re-encodes to the same bytes, survives a proto3 JSON round trip, and passes the
 * protoc-gen-validate rules of its descriptors. Golden files keep the whole output reviewable
 * (UPDATE_GOLDEN=1 rewrites them).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { fromBinary, fromJson, toBinary, toJson, type DescMessage, type JsonValue, type Message } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { SecretSchema } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { formatViolations, validateMessage, type PgvViolation } from '../../src/xds/pgv/index.js';
import { envoyValidationRegistry } from '../../src/model/json-registry.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { assertGolden } from '../support/golden.js';
import type { GeneratedConfig } from '../support/scenario.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES, generateBookinfo } from './bookinfo-fixture.js';

const SCHEMAS: ReadonlyMap<string, DescMessage> = new Map<string, DescMessage>([
  [TypeUrl.Listener, ListenerSchema],
  [TypeUrl.RouteConfiguration, RouteConfigurationSchema],
  [TypeUrl.Cluster, ClusterSchema],
  [TypeUrl.ClusterLoadAssignment, ClusterLoadAssignmentSchema],
  [TypeUrl.Secret, SecretSchema],
]);

const registry = envoyValidationRegistry();
let configs: Map<string, GeneratedConfig>;

before(async () => {
  configs = await generateBookinfo();
});

describe('bookinfo scenario: Envoy protos', () => {
  for (const proxy of Object.keys(BOOKINFO_PROXIES)) {
    test(`${proxy}: every resource round-trips and passes protoc-gen-validate`, () => {
      const config = configs.get(proxy)!;
      let checked = 0;
      for (const [typeUrl, resources] of config.resources) {
        const schema = SCHEMAS.get(typeUrl);
        assert.ok(schema, `no schema for ${typeUrl}`);
        for (const r of resources) {
          const msg: Message = fromBinary(schema, r.value);
          assert.deepEqual(toBinary(schema, msg), r.value, `${r.name}: re-encoding changed the bytes`);
          const json: JsonValue = toJson(schema, msg, { registry });
          assert.deepEqual(toBinary(schema, fromJson(schema, json, { registry })), r.value, `${r.name}: JSON round trip lost something`);
          const violations: PgvViolation[] = validateMessage(schema, msg, registry);
          assert.equal(violations.length, 0, `${typeUrl} ${r.name}:\n${formatViolations(violations)}`);
          checked++;
        }
      }
      // A proxy with nothing to check would make this test vacuous.
      assert.ok(checked >= 5, `${proxy}: only ${checked} resources generated`);
    });

    test(`${proxy}: matches its golden file`, () => {
      const c = configs.get(proxy)!;
      const j = <S extends DescMessage>(schema: S, ms: readonly unknown[]): unknown[] =>
        ms.map((m) => toJson(schema, m as never, { registry }));
      assertGolden(join(BOOKINFO_DIR, 'golden', `${proxy}.json`), {
        listeners: j(ListenerSchema, c.listeners),
        routes: j(RouteConfigurationSchema, c.routes),
        clusters: j(ClusterSchema, c.clusters),
        endpoints: j(ClusterLoadAssignmentSchema, c.endpoints),
        // Key material stays out of the golden files: names and kinds only.
        secrets: c.secrets.map((s) => ({ name: s.name, type: s.type.case })),
      });
    });
  }
});
