/**
 * WasmPlugin over the wire: a meshpilot process on the wasm scenario's mesh; an Envoy-style sidecar
 * subscribes to LDS, finds the config_discovery filters in its HCMs, subscribes to ECDS
 * (TypedExtensionConfig) by those names and gets one Wasm config each; editing a WasmPlugin file
 * pushes the changed ECDS config.
 */
import assert from 'node:assert/strict';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { TypedExtensionConfigSchema } from '../../src/gen/envoy/config/core/v3/extension_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { WasmSchema } from '../../src/gen/envoy/extensions/filters/http/wasm/v3/wasm_pb.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { ecdsNames, hcmFilters, WASM_DIR, WASM_PROXIES } from '../scenarios/wasm-fixture.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { DeltaStream } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { writeFileAtomic } from '../support/yaml-files.js';

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let stream: AdsStream | undefined;
let delta: DeltaStream | undefined;

const uris = (resp: DiscoveryResponse): Map<string, string> =>
  new Map(
    resp.resources.map((a) => {
      const ec = fromBinary(TypedExtensionConfigSchema, a.value);
      const w = ec.typedConfig ? anyUnpack(ec.typedConfig, WasmSchema) : undefined;
      const vm = w?.config?.vm.case === 'vmConfig' ? w.config.vm.value : undefined;
      const code = vm?.code?.specifier;
      return [ec.name, code?.case === 'remote' ? (code.value.httpUri?.uri ?? '') : ''];
    }),
  );

describe('WasmPlugin ECDS over ADS', () => {
  before(async () => {
    dir = tempDir();
    await cp(join(WASM_DIR, 'base'), dir.path, { recursive: true });
    await cp(join(WASM_DIR, 'plugins', 'phases.yaml'), join(dir.path, 'phases.yaml'));
    mp = await startMeshpilot({ configDir: dir.path });
  });
  after(async () => {
    stream?.close();
    delta?.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('LDS names the plugins, ECDS serves them by name, and a plugin edit is pushed', async () => {
    assert.ok(mp && dir);
    const spec = WASM_PROXIES.web!;
    stream = AdsStream.open(mp.grpcAddr, {
      node: { id: spec.id, metadata: { NAMESPACE: 'shop', LABELS: spec.labels ?? {}, CLUSTER_ID: 'Kubernetes', ISTIO_VERSION: '1.31.0' } },
    });
    stream.subscribe(TypeUrl.Listener, []);
    const lds = await stream.next(TypeUrl.Listener);
    stream.ack(lds.resp);
    const names = ecdsNames(hcmFilters(lds.resp.resources.map((a) => fromBinary(ListenerSchema, a.value))));
    assert.equal(names.length, 4, `4 plugin filters in the HCMs, got ${names.join(', ')}`);

    stream.subscribe(TypeUrl.ExtensionConfiguration, names);
    const first = await stream.next(TypeUrl.ExtensionConfiguration);
    stream.ack(first.resp);
    const before = uris(first.resp);
    assert.deepEqual([...before.keys()].sort(), names);
    assert.equal(before.get(names[0]!), 'oci://registry.example.com/plugins/authn:1.0');

    const file = join(dir.path, 'phases.yaml');
    await writeFileAtomic(dir.path, 'phases.yaml', (await readFile(file, 'utf8')).replace('plugins/authn:1.0', 'plugins/authn:2.0'));
    for (;;) {
      const next = await stream.next(TypeUrl.ExtensionConfiguration, 15_000);
      stream.ack(next.resp);
      if (uris(next.resp).get(names[0]!) === 'oci://registry.example.com/plugins/authn:2.0') break;
    }
  });

  it("Delta ADS (Envoy's default): ECDS by name after LDS, the edited config included", async () => {
    assert.ok(mp);
    const spec = WASM_PROXIES.web!;
    delta = new DeltaStream(mp.grpcAddr, {
      node: { id: spec.id, metadata: { NAMESPACE: 'shop', LABELS: spec.labels ?? {}, CLUSTER_ID: 'Kubernetes', ISTIO_VERSION: '1.31.0' } },
    });
    delta.subscribe(TypeUrl.Listener, ['*']);
    const lds = await delta.next(TypeUrl.Listener);
    delta.ack(lds.resp);
    const names = ecdsNames(hcmFilters(lds.resp.resources.map((r) => fromBinary(ListenerSchema, r.resource!.value))));
    assert.equal(names.length, 4);
    delta.subscribe(TypeUrl.ExtensionConfiguration, names);
    const ecds = await delta.next(TypeUrl.ExtensionConfiguration);
    delta.ack(ecds.resp);
    assert.deepEqual(ecds.resp.resources.map((r) => r.name).sort(), names);
    const first = ecds.resp.resources.find((r) => r.name === names[0]);
    const w = first?.resource
      ? anyUnpack(fromBinary(TypedExtensionConfigSchema, first.resource.value).typedConfig!, WasmSchema)
      : undefined;
    const code = w?.config?.vm.case === 'vmConfig' ? w.config.vm.value.code?.specifier : undefined;
    assert.equal(code?.case === 'remote' ? code.value.httpUri?.uri : undefined, 'oci://registry.example.com/plugins/authn:2.0');
  });
});
