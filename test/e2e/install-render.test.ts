/**
 * The charts are the one source of what meshctl installs, and meshctl renders them exactly as Helm
 * does: the REAL helm (built from its Go module by scripts/build-helm) lints every chart with every
 * profile, and `helm template` of each release — given the same values files and `--set`s that
 * planInstall routes to it — equals `meshctl manifest generate`, normalised only for document order
 * and whitespace: object by object (both outputs parsed) and text by text (trailing whitespace and
 * blank lines dropped), each with its `# Source:`.
 * The committed values schemas are what values-schema-gen produces, manifests/rbac holds the
 * charts' RBAC, and the demo profile's objects are accepted by a real API server (server-side apply).
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { loadChart } from '../../src/install/chart.js';
import { splitManifests } from '../../src/install/manifests.js';
import { planInstall, renderInstall, type InstallRenderOptions } from '../../src/install/render.js';
import { generateSchema, unionGlobals } from '../../src/install/values-schema-gen.js';
import { injectorSnapshot } from '../../src/inject/injector-source.js';
import { parseMeshConfig } from '../../src/config/mesh/mesh-config-file.js';
import { run } from '../../src/meshctl/test-io.js';
import { decodeYamlLikeGo, marshalYaml } from '../../src/template/index.js';
import { REPO_ROOT } from '../support/paths.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';

const execFileP = promisify(execFile);
const CHARTS = join(REPO_ROOT, 'manifests', 'charts');
const CHART_NAMES = ['base', 'meshpilot', 'gateway', 'cni'] as const;
const PROFILE_NAMES = ['default', 'demo', 'minimal', 'remote', 'empty'] as const;
/** Where scripts/build-helm puts helm (HELM_BIN_DIR as the script reads it). */
const HELM = join(process.env.HELM_BIN_DIR ?? join(process.env.HOME ?? '/root', '.cache', 'meshpilot-helm', 'bin-v4.3.2'), 'helm');

/** The helm binary (scripts/build-helm verifies it is v4.3.2), or why these tests cannot run. */
function helmOrSkip(): { helm: string } | { skip: string } {
  if (!existsSync(HELM)) return { skip: `no helm: run scripts/build-helm (builds ${HELM})` };
  return { helm: execFileSync(join(REPO_ROOT, 'scripts', 'build-helm'), { encoding: 'utf8' }).trim() };
}
const found = helmOrSkip();
const helm = 'helm' in found ? found.helm : '';
const skip = 'skip' in found ? found.skip : false;

/** JSON with every map's keys sorted (the order of keys is not part of an object). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** One document of either output: its `# Source:` and the object, canonically. */
function documents(stream: string): string[] {
  const out: string[] = [];
  for (const part of stream.split(/^---[ \t]*$/m)) {
    const source = /^# Source: (\S+)$/m.exec(part)?.[1];
    for (const doc of splitManifests(part)) {
      const obj = decodeYamlLikeGo(doc);
      if (obj === null) continue;
      out.push(`# ${source ?? '?'}\n${canonical(obj)}`);
    }
  }
  return out.sort();
}

/**
 * The same documents as text: each `# Source:` block with its lines' trailing whitespace and blank
 * lines dropped (documents holding only comments left out: they are no objects).
 */
function texts(stream: string): string[] {
  const out: string[] = [];
  for (const part of stream.split(/^---[ \t]*$/m)) {
    const lines = part
      .split('\n')
      .map((l) => l.trimEnd())
      .filter((l) => l !== '');
    if (lines.every((l) => l.startsWith('#'))) continue;
    out.push(lines.join('\n'));
  }
  return out.sort();
}

async function helmTemplate(opts: InstallRenderOptions, dir: TempDir): Promise<string> {
  const { releases } = await planInstall(opts);
  let all = '';
  for (const [i, r] of releases.entries()) {
    const files = r.valuesDocs.map((doc, j) => {
      const file = join(dir.path, `values-${i}-${j}.yaml`);
      writeFileSync(file, marshalYaml(doc));
      return file;
    });
    const args = [
      'template',
      r.release,
      join(CHARTS, r.chart),
      '--namespace',
      r.namespace,
      ...files.flatMap((f) => ['-f', f]),
      ...r.sets.flatMap((s) => ['--set', s]),
    ];
    const { stdout } = await execFileP(helm, args, { maxBuffer: 64 * 1024 * 1024 });
    all += stdout;
  }
  return all;
}

function meshctlArgs(opts: InstallRenderOptions): string[] {
  return [
    'manifest',
    'generate',
    ...(opts.profile !== undefined ? ['--set', `profile=${opts.profile}`] : []),
    ...(opts.revision !== undefined ? ['--revision', opts.revision] : []),
    ...opts.valuesFiles.flatMap((f) => ['-f', f]),
    ...opts.sets.flatMap((s) => ['--set', s]),
  ];
}

describe('charts with the real helm', { skip }, () => {
  let dir: TempDir;
  let overlay: string;
  before(() => {
    dir = tempDir('install-render-');
    overlay = join(dir.path, 'overlay.yaml');
    writeFileSync(
      overlay,
      [
        'meshConfig:',
        '  accessLogFile: /dev/stdout',
        'pilot:',
        '  env:',
        '    PILOT_ENABLE_ALPHA_GATEWAY_API: "true"',
        'gateways:',
        '  istio-ingressgateway:',
        '    replicaCount: 2',
        '    service:',
        '      type: NodePort',
        'global:',
        '  hub: example.com/istio',
        '',
      ].join('\n'),
    );
  });
  after(() => dir.remove());

  it('helm lint passes for every chart with every profile', async () => {
    await Promise.all(
      PROFILE_NAMES.map(async (profile) => {
        const { stdout } = await execFileP(helm, ['lint', ...CHART_NAMES.map((c) => join(CHARTS, c)), '--set', `profile=${profile}`]);
        assert.match(stdout, /4 chart\(s\) linted, 0 chart\(s\) failed/, `profile ${profile}:\n${stdout}`);
      }),
    );
  });

  const cases: Array<{ name: string; opts: () => InstallRenderOptions; minObjects: number }> = [
    ...PROFILE_NAMES.map((profile) => ({
      name: `profile ${profile}`,
      opts: () => ({ profile, sets: [], valuesFiles: [] }),
      minObjects: profile === 'empty' ? 0 : 2,
    })),
    { name: '--revision canary', opts: () => ({ revision: 'canary', sets: [], valuesFiles: [] }), minObjects: 20 },
    {
      name: 'demo with --set for istiod, the gateway and globals',
      opts: () => ({
        profile: 'demo',
        sets: [
          'pilot.replicaCount=3',
          'pilot.autoscaleEnabled=false',
          'gateways.istio-egressgateway.replicaCount=2',
          'global.logging.level=default:debug',
        ],
        valuesFiles: [],
      }),
      minObjects: 20,
    },
    {
      name: 'cni enabled on the minimal profile',
      opts: () => ({ profile: 'minimal', sets: ['cni.enabled=true', 'cni.cniConfFileName=10-bridge.conflist'], valuesFiles: [] }),
      minObjects: 20,
    },
    {
      name: 'a values file beside --set',
      opts: () => ({ sets: ['meshConfig.enableTracing=true'], valuesFiles: [overlay] }),
      minObjects: 20,
    },
  ];

  for (const c of cases) {
    it(`helm template equals meshctl manifest generate: ${c.name}`, async () => {
      const opts = c.opts();
      const [fromHelm, fromMeshctl] = await Promise.all([helmTemplate(opts, dir), run(meshctlArgs(opts))]);
      assert.equal(fromMeshctl.code, 0, fromMeshctl.stderr);
      const ours = documents(fromMeshctl.stdout);
      assert.ok(ours.length >= c.minObjects, `${ours.length} objects`);
      assert.deepEqual(ours, documents(fromHelm));
      // Stricter: the documents' text, comments and quoting included, as helm prints them.
      assert.deepEqual(texts(fromMeshctl.stdout), texts(fromHelm));
    });
  }

  it('helm refuses what meshctl refuses, naming the same key', async () => {
    const bad = await run(['manifest', 'generate', '--set', 'pilot.replicaCount=-1']);
    assert.equal(bad.code, 1);
    assert.equal(bad.stdout, '');
    assert.equal(bad.stderr, 'Error: invalid values: pilot.replicaCount: minimum: got -1, want 0 (chart meshpilot, values.schema.json)\n');
    await assert.rejects(
      execFileP(helm, ['template', 'x', join(CHARTS, 'meshpilot'), '--set', 'pilot.replicaCount=-1']),
      (e: Error & { stderr?: string }) => {
        assert.match(e.stderr ?? '', /at '\/pilot\/replicaCount': minimum: got -1, want 0/);
        return true;
      },
    );
  });
});

describe('single sources', () => {
  it('the committed values schemas are what values-schema-gen produces (UPDATE_SCHEMAS=1 rewrites them)', () => {
    const charts = CHART_NAMES.map((c) => loadChart(join(CHARTS, c)));
    const globals = unionGlobals(charts.map((c) => c.defaults));
    for (const name of ['base', 'meshpilot', 'cni'] as const) {
      const chart = charts.find((c) => c.name === name);
      assert.ok(chart);
      const want = `${JSON.stringify(generateSchema(name, chart.defaults, globals), null, 2)}\n`;
      const file = join(CHARTS, name, 'values.schema.json');
      if (process.env.UPDATE_SCHEMAS === '1') writeFileSync(file, want);
      assert.equal(readFileSync(file, 'utf8'), want, `${file} is stale: run with UPDATE_SCHEMAS=1`);
    }
  });

  it('manifests/rbac/*.yaml hold exactly the RBAC the charts render (names, rules, bindings)', async () => {
    const { objects } = await renderInstall({ profile: 'minimal', sets: ['cni.enabled=true'], valuesFiles: [] });
    const rbacKinds = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
    const essence = (o: Record<string, unknown>): string => {
      const meta = o.metadata as { name: string; namespace?: string };
      return JSON.stringify({
        kind: o.kind,
        name: meta.name,
        namespace: meta.namespace ?? '',
        rules: o.rules ?? null,
        roleRef: o.roleRef ?? null,
        subjects: o.subjects ?? null,
      });
    };
    for (const [file, release] of [
      ['meshpilot-rbac.yaml', 'istiod'],
      ['meshpilot-cni-rbac.yaml', 'istio-cni'],
    ] as const) {
      const docs = parseAllDocuments(readFileSync(join(REPO_ROOT, 'manifests', 'rbac', file), 'utf8')).map(
        (d) => d.toJS() as Record<string, unknown>,
      );
      const rendered = objects.filter((o) => o.release === release && rbacKinds.has(o.object.kind)).map((o) => essence(o.object));
      assert.deepEqual(docs.map(essence).sort(), rendered.sort(), file);
    }
  });
});

describe('what meshpilot reads from the installed ConfigMaps', () => {
  for (const profile of ['default', 'demo'] as const) {
    it(`${profile}: the mesh config and the injector ConfigMap parse as meshpilot parses them at run time`, async () => {
      const { objects } = await renderInstall({ profile, sets: [], valuesFiles: [] });
      const data = (name: string): Record<string, string> => {
        const cm = objects.find((o) => o.object.kind === 'ConfigMap' && o.object.metadata.name === name);
        assert.ok(cm, `ConfigMap ${name}`);
        return cm.object.data as Record<string, string>;
      };
      const mesh = parseMeshConfig(data('istio').mesh ?? '', 'ConfigMap istio', 'cluster.local');
      assert.equal(mesh.mesh.rootNamespace, 'istio-system');
      const injector = injectorSnapshot(data('istio-sidecar-injector'), 'ConfigMap istio-sidecar-injector', {});
      assert.deepEqual(injector.templates.names().sort(), ['gateway', 'grpc-agent', 'grpc-simple', 'kube-gateway', 'sidecar', 'waypoint']);
      // The templates in the ConfigMap are the injector's own files (one source, linked into the chart).
      const config = decodeYamlLikeGo(data('istio-sidecar-injector').config ?? '') as { templates: Record<string, string> };
      const files: Array<[string, string]> = [
        ['sidecar', 'injection-template.yaml'],
        ['gateway', 'gateway-injection-template.yaml'],
        ['grpc-simple', 'grpc-simple.yaml'],
        ['grpc-agent', 'grpc-agent.yaml'],
        ['kube-gateway', 'kube-gateway.yaml'],
        ['waypoint', 'waypoint.yaml'],
      ];
      for (const [name, file] of files) {
        assert.equal(config.templates[name], `${readFileSync(join(REPO_ROOT, 'src', 'inject', 'templates', file), 'utf8').trim()}\n`, name);
      }
    });
  }
});
