import assert from 'node:assert/strict';
import { test } from 'node:test';
import { annotationsAnalyzer } from './annotations.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('annotations', n);
const D = 'testdata/meshctl/analyze/annotations';

test('IST0108 for an Istio annotation the catalogue lacks, IST0107 (with every allowed kind) for one on the wrong kind, at the annotation', async () => {
  assert.deepEqual(await analyzeLines(annotationsAnalyzer, [f('unknown-and-misplaced.yaml')]), [
    `Warning [IST0107] (Namespace shop ${D}/unknown-and-misplaced.yaml:34) Misplaced annotation: ambient.istio.io/waypoint-inbound-binding can only be applied to GatewayClass, Gateway`,
    `Warning [IST0107] (Pod shop/web ${D}/unknown-and-misplaced.yaml:9) Misplaced annotation: networking.istio.io/exportTo can only be applied to Service`,
    `Warning [IST0107] (Service shop/web ${D}/unknown-and-misplaced.yaml:22) Misplaced annotation: sidecar.istio.io/inject can only be applied to Pod`,
    `Warning [IST0108] (Pod shop/web ${D}/unknown-and-misplaced.yaml:8) Unknown annotation: sidecar.istio.io/proxyCPUs`,
    `Info [IST0135] (Service shop/web ${D}/unknown-and-misplaced.yaml:22) Annotation "sidecar.istio.io/inject" has been deprecated in favor of the "sidecar.istio.io/inject" label and may not work in future Istio versions.`,
  ]);
});

test("IST0135 for deprecated annotations (not when the replacement label is set too); on a Deployment's metadata a Pod annotation is also misplaced", async () => {
  assert.deepEqual(await analyzeLines(annotationsAnalyzer, [f('deprecated.yaml')]), [
    `Warning [IST0107] (Deployment shop/api ${D}/deprecated.yaml:35) Misplaced annotation: sidecar.istio.io/inject can only be applied to Pod`,
    `Info [IST0135] (Deployment shop/api ${D}/deprecated.yaml:35) Annotation "sidecar.istio.io/inject" has been deprecated in favor of the "sidecar.istio.io/inject" label and may not work in future Istio versions.`,
    `Info [IST0135] (Pod shop/legacy ${D}/deprecated.yaml:7) Annotation "sidecar.istio.io/inject" has been deprecated in favor of the "sidecar.istio.io/inject" label and may not work in future Istio versions.`,
    `Info [IST0135] (Pod shop/legacy ${D}/deprecated.yaml:8) Annotation "sidecar.istio.io/statsInclusionPrefixes" has been deprecated and may not work in future Istio versions.`,
  ]);
});

test("known annotations in place, the ones Istio sets itself (status, revision) and other vendors' annotations: nothing", async () => {
  assert.deepEqual(await analyzeLines(annotationsAnalyzer, [f('clean.yaml')]), []);
});

test('IST0125 for values the injector rejects, with its error, at the annotation; a valid value: nothing', async () => {
  assert.deepEqual(await analyzeLines(annotationsAnalyzer, [f('invalid-values.yaml')]), [
    `Warning [IST0125] (Pod shop/web ${D}/invalid-values.yaml:7) Invalid annotation readiness.status.sidecar.istio.io/periodSeconds: strconv.ParseUint: parsing "often": invalid syntax`,
    `Warning [IST0125] (Pod shop/web ${D}/invalid-values.yaml:9) Invalid annotation sidecar.istio.io/interceptionMode: interceptionMode invalid, use REDIRECT,TPROXY,NONE: MAGIC`,
  ]);
});
