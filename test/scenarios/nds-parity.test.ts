/**
 * meshpilot's DNS name tables against the real istiod's (testdata/nds/istiod.json, captured by
 * `npx tsx scripts/istiod-nds-golden.ts` from testdata/nds/config): for every proxy, the WHOLE
 * NameTable — every host, its addresses, registry, short name and namespace — must be equal, after
 * the normalisation below. Any other difference fails, with each differing host named. There is
 * no list of accepted differences: none is left.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import { NameTableSchema } from '../../src/gen/dns/proto/nds_pb.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { pushRequest } from '../../src/model/push-request.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { loadScenario, proxyFor, type NodeSpec } from '../support/scenario.js';
import { NDS_CONFIG_DIR, NDS_GOLDEN, NDS_PROXIES, ndsConfigDigest, type NdsGolden } from './nds-fixture.js';

interface NameInfo {
  ips?: string[];
  registry?: string;
  shortname?: string;
  namespace?: string;
}
type Table = Record<string, NameInfo>;

/**
 * Normalised: the order of a host's addresses. istiod's differs between its own runs (a
 * ServiceEntry with several addresses is one service per address, merged in an order that is not
 * stable), and the agent shuffles the addresses of every answer anyway.
 */
function normalise(t: Table): Table {
  return Object.fromEntries(
    Object.entries(t)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([h, i]) => [h, { ...i, ips: [...(i.ips ?? [])].sort() }]),
  );
}

async function meshpilotTables(): Promise<Map<string, Table>> {
  const { push } = await loadScenario(NDS_CONFIG_DIR);
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  });
  const out = new Map<string, Table>();
  for (const spec of NDS_PROXIES) {
    const proxy = proxyFor(spec as NodeSpec);
    const gen = generators.lookup(proxy, TypeUrl.NameTable);
    assert.ok(gen, `no NDS generator for ${proxy.type}`);
    const res = gen.generate(
      proxy,
      { typeUrl: TypeUrl.NameTable, names: new Set(), wildcard: true },
      push,
      pushRequest({ full: true, reason: 'config', start: 0 }),
    );
    assert.equal(res.length, 1, 'one NameTable per proxy');
    assert.equal(res[0]!.name, '', 'unnamed, as istiod sends it');
    out.set(spec.id, (toJson(NameTableSchema, fromBinary(NameTableSchema, res[0]!.value)) as { table?: Table }).table ?? {});
  }
  return out;
}

describe('NDS parity with istiod', () => {
  const golden = JSON.parse(readFileSync(NDS_GOLDEN, 'utf8')) as NdsGolden;

  it('the golden is of the current config (else recapture: npx tsx scripts/istiod-nds-golden.ts)', () => {
    assert.equal(golden.configDigest, ndsConfigDigest());
    assert.deepEqual(
      golden.proxies.map((p) => p.id),
      NDS_PROXIES.map((p) => p.id),
    );
  });

  it("every proxy gets istiod's whole name table", async () => {
    const ours = await meshpilotTables();
    const problems: string[] = [];
    for (const { id, table } of golden.proxies) {
      const want = normalise((table as { table?: Table }).table ?? {});
      const got = normalise(ours.get(id) ?? {});
      for (const host of new Set([...Object.keys(want), ...Object.keys(got)])) {
        const w = want[host];
        const g = got[host];
        if (JSON.stringify(w) === JSON.stringify(g)) continue;
        problems.push(`${id} ${host}: istiod ${JSON.stringify(w)} | meshpilot ${JSON.stringify(g)}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
