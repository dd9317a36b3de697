import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineCounter, parseDocument } from 'yaml';
import { lineOfPath, pathSteps } from './field-line.js';
import { atFieldLines, parseConfigFile } from './parse.js';
import { validateObject } from './validation/index.js';

const BAD_DR = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: reviews
  namespace: default
spec:
  host: reviews
  trafficPolicy:
    loadBalancer:
      simple: ROUND_ROBIN
    conectionPool:
      tcp:
        maxConnections: 10
`;

const BAD_REGEX = `# a comment first
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: vs
  annotations:
    sidecar.istio.io/inject: "true"
  labels: {app: web}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews}
  - match:
    - uri:
        regex: "a(b"
    route:
    - destination:
        host: reviews
`;

function lineOf(text: string, path: string): number | undefined {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  return lineOfPath(doc.contents, path, (o) => lc.linePos(o).line);
}

/** Validation errors of every document of `text`, as `file:line path`. */
function errorLines(text: string, file: string): string[] {
  const parsed = parseConfigFile(text, file);
  assert.ok(parsed.ok);
  return parsed.value.documents.flatMap((doc) => {
    const r = validateObject(doc.object, doc.origin);
    return r.ok ? [] : atFieldLines(r.errors, doc).map((e) => `${e.origin.file}:${e.origin.line} ${e.path}`);
  });
}

describe('field lines', () => {
  it('pathSteps: fields, indexes and bracketed keys', () => {
    assert.deepEqual(pathSteps('spec.http[0].match[1].headers[x-a.b].exact'), [
      { name: 'spec', bracket: false },
      { name: 'http', bracket: false },
      { name: '0', bracket: true },
      { name: 'match', bracket: false },
      { name: '1', bracket: true },
      { name: 'headers', bracket: false },
      { name: 'x-a.b', bracket: true },
      { name: 'exact', bracket: false },
    ]);
  });

  it('the line of a key, of a list item, of keys holding dots', () => {
    assert.equal(lineOf(BAD_REGEX, 'spec.http[1].match[0].uri.regex'), 16);
    assert.equal(lineOf(BAD_REGEX, 'spec.http[1]'), 14);
    assert.equal(lineOf(BAD_REGEX, 'metadata.annotations.sidecar.istio.io/inject'), 7);
    assert.equal(lineOf(BAD_REGEX, 'metadata.annotations[sidecar.istio.io/inject]'), 7);
    assert.equal(lineOf(BAD_REGEX, 'metadata.labels[app]'), 8);
  });

  it('a path that goes past the document: the deepest part there; none at all: undefined', () => {
    assert.equal(lineOf(BAD_REGEX, 'spec.http[1].route[0].destination.subset'), 18);
    assert.equal(lineOf(BAD_REGEX, 'spec.http[7].route'), 11);
    assert.equal(lineOf(BAD_REGEX, 'status.conditions'), undefined);
  });

  it("a schema error names the unknown field's line, not the object's first line", () => {
    assert.deepEqual(errorLines(BAD_DR, 'bad-dr.yaml'), ['bad-dr.yaml:11 spec.trafficPolicy.conectionPool']);
  });

  it('an invalid regex names the regex line, in every document of a file', () => {
    assert.deepEqual(errorLines(`${BAD_DR}---\n${BAD_REGEX}`, 'two.yaml'), [
      'two.yaml:11 spec.trafficPolicy.conectionPool',
      'two.yaml:30 spec.http[1].match[0].uri.regex',
    ]);
  });

  it('JSON files and the items of a List', () => {
    const json = JSON.stringify(
      {
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'networking.istio.io/v1',
            kind: 'DestinationRule',
            metadata: { name: 'a' },
            spec: { host: 'a', trafficPolicy: { loadBalancer: { simple: 'ROUND_ROBIN' }, conectionPool: {} } },
          },
        ],
      },
      null,
      2,
    );
    const line = json.split('\n').findIndex((l) => l.includes('conectionPool')) + 1;
    assert.deepEqual(errorLines(json, 'list.json'), [`list.json:${line} spec.trafficPolicy.conectionPool`]);
    const yamlList = `apiVersion: v1\nkind: List\nitems:\n- ${BAD_DR.trimEnd().split('\n').join('\n  ')}\n`;
    assert.deepEqual(errorLines(yamlList, 'list.yaml'), ['list.yaml:14 spec.trafficPolicy.conectionPool']);
  });

  it('kinds whose spec is their top-level fields (Secret): spec.data is data in the file', () => {
    const secret = 'apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ntype: Opaque\ndata:\n  key: 42\n';
    const parsed = parseConfigFile(secret, 's.yaml');
    assert.ok(parsed.ok);
    const doc = parsed.value.documents[0]!;
    assert.equal(doc.lineOf?.('spec.data[key]'), 6);
    assert.equal(doc.lineOf?.('spec.type'), 4);
  });
});
