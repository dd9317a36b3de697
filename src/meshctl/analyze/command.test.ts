import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { run } from '../test-io.js';

const C = 'testdata/meshctl/analyze/cli';
const FOUND =
  'Error: Analyzers found issues when analyzing namespace: default.\nSee https://istio.io/latest/docs/reference/config/analysis for more information about causes and resolutions.\n';
const HOST = `Error [IST0101] (VirtualService default/reviews ${C}/issues/reviews.yaml:9) Referenced host not found: "reviews.bogus"`;
const REDIS = `Warning [IST0134] (ServiceEntry default/redis ${C}/issues/warning-only.yaml:8) ServiceEntry addresses are required for this protocol.`;
const MYSQL = `Warning [IST0134] (ServiceEntry db/mysql ${C}/issues/reviews.yaml:19) ServiceEntry addresses are required for this protocol.`;

test('a clean directory: the check mark on stderr, nothing on stdout, exit 0', async () => {
  const r = await run(['analyze', `${C}/clean`]);
  assert.deepEqual(r, { code: 0, stdout: '', stderr: '\u2714 No validation issues found when analyzing namespace: default.\n' });
});

test('issues: istioctl log lines, errors first, exit 79; other namespaces are filtered out', async () => {
  const r = await run(['analyze', `${C}/issues`]);
  assert.equal(r.code, 79);
  assert.equal(r.stdout, `${HOST}\n${REDIS}\n`);
  assert.equal(r.stderr, FOUND);
});

test('-A analyzes every namespace', async () => {
  const r = await run(['analyze', '-A', `${C}/issues`]);
  assert.equal(r.stdout, `${HOST}\n${MYSQL}\n${REDIS}\n`);
  assert.match(r.stderr, /when analyzing all namespaces\./);
});

test('-n sets the namespace of objects that name none, and the namespace analyzed', async () => {
  const r = await run(['-n', 'db', 'analyze', `${C}/issues`]);
  assert.equal(r.code, 79);
  assert.equal(
    r.stdout,
    [
      `Error [IST0101] (VirtualService db/reviews ${C}/issues/reviews.yaml:9) Referenced host not found: "reviews.bogus"`,
      `Warning [IST0134] (ServiceEntry db/mysql ${C}/issues/reviews.yaml:19) ServiceEntry addresses are required for this protocol.`,
      `Warning [IST0134] (ServiceEntry db/redis ${C}/issues/warning-only.yaml:8) ServiceEntry addresses are required for this protocol.`,
    ].join('\n') + '\n',
  );
  assert.match(r.stderr, /when analyzing namespace: db\./);
});

test('-o json: istioctl fields, tab-indented, parseable', async () => {
  const r = await run(['analyze', '-o', 'json', `${C}/issues/reviews.yaml`]);
  assert.equal(r.code, 79);
  assert.ok(r.stdout.includes('\n\t{\n\t\t"code"'));
  assert.deepEqual(JSON.parse(r.stdout), [
    {
      code: 'IST0101',
      documentationUrl: 'https://istio.io/latest/docs/reference/config/analysis/ist0101/?ref=istioctl-analyze',
      level: 'Error',
      message: 'Referenced host not found: "reviews.bogus"',
      origin: 'VirtualService default/reviews',
      reference: `${C}/issues/reviews.yaml:9`,
    },
  ]);
});

test('-o yaml carries the same objects; -o json with nothing found prints []', async () => {
  const y = await run(['analyze', '-A', '-o', 'yaml', `${C}/issues`]);
  const docs = parse(y.stdout) as { code: string; origin: string }[];
  assert.deepEqual(
    docs.map((d) => `${d.code} ${d.origin}`),
    ['IST0101 VirtualService default/reviews', 'IST0134 ServiceEntry db/mysql', 'IST0134 ServiceEntry default/redis'],
  );
  const j = await run(['analyze', '-o', 'json', `${C}/clean`]);
  assert.deepEqual({ code: j.code, out: JSON.parse(j.stdout) as unknown }, { code: 0, out: [] });
});

test('--suppress by code and resource, in the new and the old name form, with globs', async () => {
  const a = await run(['analyze', '--suppress', 'IST0101=VirtualService default/reviews', `${C}/issues`]);
  assert.deepEqual({ code: a.code, stdout: a.stdout }, { code: 0, stdout: `${REDIS}\n` });
  const b = await run(['analyze', '-S', 'IST0101=VirtualService reviews.default', '-S', 'IST0134=ServiceEntry *', `${C}/issues`]);
  assert.deepEqual({ code: b.code, stdout: b.stdout }, { code: 0, stdout: '' });
  assert.match(b.stderr, /No validation issues found/);
  const c = await run(['analyze', '-S', 'IST0134=VirtualService *', `${C}/issues`]);
  assert.equal(c.stdout, `${HOST}\n${REDIS}\n`, 'a suppression for another kind suppresses nothing');
});

test('--failure-threshold and --output-threshold', async () => {
  const warn = await run(['analyze', `${C}/issues/warning-only.yaml`]);
  assert.deepEqual({ code: warn.code, stdout: warn.stdout }, { code: 0, stdout: `${REDIS}\n` });
  const strict = await run(['analyze', '--failure-threshold', 'Warning', `${C}/issues/warning-only.yaml`]);
  assert.equal(strict.code, 79);
  const quiet = await run(['analyze', '--output-threshold', 'Error', `${C}/issues`]);
  assert.deepEqual({ code: quiet.code, stdout: quiet.stdout }, { code: 79, stdout: `${HOST}\n` });
  const hidden = await run(['analyze', '--output-threshold', 'error', '--failure-threshold', 'Warning', `${C}/issues/warning-only.yaml`]);
  assert.equal(hidden.code, 79, 'the exit code looks at messages that were not printed');
});

test('an unparsable file: exit 65, named with its line, the rest still analyzed', async () => {
  const r = await run(['analyze', `${C}/broken`]);
  assert.equal(r.code, 65);
  assert.match(r.stderr, new RegExp(`^Error: failed to parse ${C}/broken/bad\\.yaml:\\d+: YAML syntax error`, 'm'));
  assert.equal(r.stdout, '');
});

test('-R descends into subdirectories; without it only the top level is read', async () => {
  const flat = await run(['analyze', `${C}/nested`]);
  assert.equal(flat.code, 0);
  const deep = await run(['analyze', '-R', `${C}/nested`]);
  assert.equal(deep.code, 79);
  assert.match(
    deep.stdout,
    /^Error \[IST0111\] \(Sidecar default\/one testdata\/meshctl\/analyze\/cli\/nested\/deeper\/sidecars\.yaml:1\)/,
  );
});

test('- reads stdin', async () => {
  const r = await run(
    ['analyze', '-'],
    'apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: x}\nspec: {host: nowhere}\n',
  );
  assert.equal(
    r.stdout,
    'Warning [IST0174] (DestinationRule default/x stdin.yaml:1) The host nowhere defined in the DestinationRule does not match any services in the mesh.\n',
  );
});

test('bad usage exits 64 with one line saying what to do', async () => {
  for (const argv of [
    ['analyze'],
    ['analyze', '--failure-threshold', 'Fatal', C],
    ['analyze', '--suppress', 'nonsense', C],
    ['analyze', '--bogus', C],
    ['analyze', '-A', '-n', 'x', C],
    ['analyze', '--use-kube', 'maybe', C],
    ['analyze', '--remote-contexts', 'west', C],
  ]) {
    const r = await run(argv);
    assert.equal(r.code, 64, argv.join(' '));
    assert.match(r.stderr, /^(Error|error): /, argv.join(' '));
  }
});

test('--list-analyzers names every analyzer with the codes it emits', async () => {
  const r = await run(['analyze', '--list-analyzers']);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^Available analyzers:\n/);
  for (const code of [
    'IST0101',
    'IST0106',
    'IST0107',
    'IST0108',
    'IST0109',
    'IST0110',
    'IST0111',
    'IST0112',
    'IST0116',
    'IST0130',
    'IST0131',
    'IST0134',
    'IST0135',
    'IST0137',
    'IST0138',
    'IST0140',
    'IST0145',
    'IST0149',
    'IST0151',
    'IST0152',
    'IST0153',
    'IST0154',
    'IST0155',
    'IST0160',
    'IST0161',
    'IST0162',
    'IST0166',
    'IST0167',
    'IST0173',
    'IST0174',
    'IST0177',
  ]) {
    assert.ok(r.stdout.includes(code), code);
  }
  assert.match(r.stdout, /\* virtualservice\.DestinationHostAnalyzer:\n {4}Checks the destination hosts/);
});

test('every analyzer runs under `meshctl analyze`: the scenario directories of the annotation, Deployment, EnvoyFilter, gateway, Telemetry and ServiceEntry analyzers give their codes in -o json', async () => {
  // ingress-subsets: one file (its two files define the same VirtualService, an error when read together).
  // gateway-secret first: its pods are then the first the Gateways select, so credentials are looked up in their namespace.
  const dirs = [
    'annotations',
    'deployment-services',
    'envoy-filter',
    'gateway-secret',
    'gateway-ports',
    'k8s-gateway-selector',
    'conflicting-service-entry-protocol',
    'telemetry-default-selector',
    'ingress-subsets/subsets.yaml',
    'sidecar-selector',
  ];
  const r = await run(['analyze', '-A', '-o', 'json', ...dirs.map((d) => `testdata/meshctl/analyze/${d}`)]);
  assert.equal(r.code, 79, r.stderr);
  const codes = new Set((JSON.parse(r.stdout) as { code: string }[]).map((m) => m.code));
  for (const code of [
    'IST0101',
    'IST0106',
    'IST0107',
    'IST0108',
    'IST0116',
    'IST0135',
    'IST0137',
    'IST0140',
    'IST0151',
    'IST0152',
    'IST0153',
    'IST0154',
    'IST0155',
    'IST0160',
    'IST0161',
    'IST0162',
    'IST0166',
    'IST0167',
    'IST0177',
  ]) {
    assert.ok(codes.has(code), `${code} missing from ${[...codes].sort().join(' ')}`);
  }
});

test('an object failing validation is reported (IST0106) and still analyzed as far as it reads, as istioctl', async () => {
  const r = await run(['analyze', '-A', `${C}/invalid-still-analyzed`]);
  assert.equal(r.code, 79);
  const f = `${C}/invalid-still-analyzed/gateway.yaml`;
  assert.equal(
    r.stdout,
    [
      `Error [IST0101] (Gateway edge/Edge-Gateway ${f}:25) Referenced credentialName not found: "shop-cert"`,
      `Error [IST0106] (Gateway edge/Edge-Gateway ${f}:17) Schema validation error: metadata.name: invalid name "Edge-Gateway": must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)`,
      `Error [IST0106] (Gateway edge/Edge-Gateway ${f}:22) Schema validation error: spec.servers[0].port: port is required`,
      '',
    ].join('\n'),
  );
});

test("files only: istioctl's default ingress gateway (pod and service in the Istio namespace) stands in for an install", async () => {
  const f = `${C}/default-ingress/gateway.yaml`;
  const r = await run(['analyze', '-A', f]);
  assert.equal(
    r.stdout,
    `Warning [IST0162] (Gateway shop/web ${f}:8) The gateway is listening on a target port (port 8080) that is not defined in the Service associated with its workload instances (Pod selector istio=ingressgateway). If you need to access the gateway port through the gateway Service, it will not be available.\n`,
  );
  // With the ingress controller off in the mesh config there is no stand-in: the selector picks nothing.
  const off = await run(['analyze', '-A', '--meshConfigFile', `${C}/default-ingress/mesh-ingress-off.yaml`, f]);
  assert.match(off.stdout, /^Error \[IST0101\] \(Gateway shop\/web .*\) Referenced selector not found: "istio=ingressgateway"$/m);
});
