import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { run } from './test-io.js';

const ISTIO = 'testdata/inject/istio';
type Obj = Record<string, unknown>;
const docs = (text: string): Obj[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Obj)
    .filter((d) => d !== null);
const podSpec = (o: Obj): Obj => ((o.spec as Obj).template as Obj).spec as Obj;
const names = (list: unknown): string[] => ((list as Obj[] | undefined) ?? []).map((c) => String(c.name));

test('kube-inject: a StatefulSet gets istio-init and istio-proxy, as istiod injects it', async () => {
  const r = await run(['kube-inject', '-f', `${ISTIO}/statefulset.yaml`]);
  assert.equal(r.code, 0, r.stderr);
  const [out] = docs(r.stdout);
  assert.ok(out);
  const spec = podSpec(out);
  // Native sidecars (ENABLE_NATIVE_SIDECARS unset = auto): the proxy is an init container that keeps running.
  assert.deepEqual(names(spec.initContainers), ['istio-init', 'istio-proxy']);
  // The same containers and volumes as istiod's golden for this input (Istio's own test data).
  const [golden] = docs(readFileSync(`${ISTIO}/statefulset.yaml.injected`, 'utf8'));
  assert.ok(golden);
  for (const field of ['initContainers', 'containers', 'volumes'])
    assert.deepEqual(names(spec[field]), names(podSpec(golden)[field]), field);
  const legacy = await run(['kube-inject', '-f', `${ISTIO}/statefulset.yaml`], undefined, { ENABLE_NATIVE_SIDECARS: 'false' });
  assert.deepEqual(
    names(podSpec(docs(legacy.stdout)[0]!).containers),
    ['hello', 'istio-proxy'],
    'ENABLE_NATIVE_SIDECARS=false: a regular container',
  );
});

test('kube-inject: every document of a multi-document manifest; host networking is skipped with a warning', async () => {
  const manifest = `${readFileSync(`${ISTIO}/statefulset.yaml`, 'utf8')}\n---\n${readFileSync(`${ISTIO}/hello-host-network.yaml`, 'utf8')}`;
  const r = await run(['kube-inject', '-f', '-'], manifest);
  assert.equal(r.code, 0, r.stderr);
  const out = docs(r.stdout);
  assert.equal(out.length, 2);
  assert.ok(names(podSpec(out[0]!).initContainers).includes('istio-proxy'));
  assert.deepEqual(names(podSpec(out[1]!).initContainers), [], 'the host-network Deployment is left as it was');
  assert.match(r.stderr, /Skipping injection because Deployment "hello-host-network" has host networking enabled/);
});

test('kube-inject: --meshConfigFile sets the proxy config; -o writes a file', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'meshctl-inject-'));
  try {
    writeFileSync(path.join(dir, 'mesh.yaml'), 'defaultConfig:\n  discoveryAddress: meshpilot.mesh-system.svc:15012\n');
    const outFile = path.join(dir, 'out.yaml');
    const r = await run(['kube-inject', '-f', `${ISTIO}/statefulset.yaml`, '--meshConfigFile', path.join(dir, 'mesh.yaml'), '-o', outFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(readFileSync(outFile, 'utf8'), /meshpilot\.mesh-system\.svc:15012/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('kube-inject: no -f is a usage error (64); a missing file 1; unparsable YAML 65', async () => {
  assert.equal((await run(['kube-inject'])).code, 64);
  const missing = await run(['kube-inject', '-f', 'no/such.yaml']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read manifest no\/such\.yaml/);
  const bad = await run(['kube-inject', '-f', '-'], 'kind: [unclosed\n');
  assert.equal(bad.code, 65);
  assert.match(bad.stderr, /document 1/);
});
