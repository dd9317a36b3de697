import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { DurationSchema } from '@bufbuild/protobuf/wkt';
import { renderTemplate } from '../template/index.js';
import { ProxyConfigSchema } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { appendMultusNetwork, excludeInboundPort, formatDuration, goSprint, injectionFuncs } from './funcs.js';
import { goCamelCase, k8sView, protoView } from './go-view.js';
import { defaultProxyConfig } from './mesh.js';

const funcs = injectionFuncs({ env: { MESH_VENDOR: 'acme', EMPTY: '' } });
const render = (text: string, data: unknown = {}): string => renderTemplate(text, data, { funcs, name: 't' });

describe("istiod's injection template functions", () => {
  it('annotation: the pod annotation, else the default printed as Go prints it', () => {
    const meta = k8sView({ annotations: { 'sidecar.istio.io/logLevel': 'debug' } }, 'metadata');
    assert.equal(render('{{ annotation .M `sidecar.istio.io/logLevel` "warning" }}', { M: meta }), 'debug');
    assert.equal(render('{{ annotation .M `status.sidecar.istio.io/port` .V }}', { M: meta, V: 15020 }), '15020');
    assert.equal(render('{{ annotation .M `x` .Missing }}', { M: meta }), '<nil>');
    const pc = protoView(ProxyConfigSchema, defaultProxyConfig());
    assert.equal(render('{{ annotation .M `sidecar.istio.io/interceptionMode` .P.InterceptionMode }}', { M: meta, P: pc }), 'REDIRECT');
  });

  it('excludeInboundPort adds the status port once; 0 and "" add nothing', () => {
    assert.equal(excludeInboundPort(15020, ''), '15020');
    assert.equal(excludeInboundPort('15020', '4,5'), '4,5,15020');
    assert.equal(excludeInboundPort('15020', '15020,4'), '15020,4');
    assert.equal(excludeInboundPort('0', '4'), '4');
    assert.equal(excludeInboundPort(' 123 ', ' 4, ,5 '), '4,5,123');
  });

  it('valueOrDefault, isset, contains (needle first), toLower, directory, env', () => {
    assert.equal(render('{{ valueOrDefault .A "d" }}|{{ valueOrDefault "" "d" }}|{{ valueOrDefault "x" "d" }}', {}), 'd|d|x');
    assert.equal(render('{{ isset .M "a" }} {{ isset .M "b" }}', { M: { a: '' } }), 'true false');
    assert.equal(render('{{ contains "/" "a/b" }} {{ contains "/" "ab" }}'), 'true false');
    assert.equal(render('{{ toLower "Deployment" }}'), 'deployment');
    assert.equal(render('{{ directory "/etc/certs/ca.pem" }}|{{ directory "ca.pem" }}'), '/etc/certs/|');
    assert.equal(render('{{ env "MESH_VENDOR" "none" }} {{ env "EMPTY" "none" }} {{ env "UNSET" "none" }}'), 'acme none none');
  });

  it('indent leaves the first line alone (istiod), toYaml marshals as sigs.k8s.io/yaml', () => {
    assert.equal(render('{{ indent 2 "a\\nb\\nc" }}'), 'a\n  b\n  c');
    assert.equal(
      render('{{ toYaml .R }}', { R: { requests: { memory: '128Mi', cpu: '100m' } } }),
      'requests:\n  cpu: 100m\n  memory: 128Mi\n',
    );
    assert.equal(
      render('{{ toYaml (omitNil .R) }}', { R: { limits: { cpu: null, memory: null }, requests: { cpu: '1', memory: null } } }),
      'requests:\n  cpu: "1"\n',
    );
  });

  it('toJSON sorts keys and escapes as Go; fromJSON; structToJSON keeps Go field order of ports', () => {
    assert.equal(render('{{ toJSON .M }}', { M: { b: '<x>', a: '1' } }), '{"a":"1","b":"\\u003cx\\u003e"}');
    assert.equal(render('{{ range $k, $v := fromJSON .J }}{{ $k }}={{ $v }};{{ end }}', { J: '{"b":2,"a":"x"}' }), 'a=x;b=2;');
    assert.equal(render('{{ fromJSON "nope" }}'), '{}');
    const spec = k8sView({ containers: [{ name: 'c', ports: [{ protocol: 'TCP', containerPort: 80, name: 'http' }] }] }, 'spec');
    assert.equal(
      render('{{ range .S.Containers }}{{ range .Ports }}{{ structToJSON . }}{{ end }}{{ end }}', { S: spec }),
      '{"name":"http","containerPort":80,"protocol":"TCP"}',
    );
    assert.equal(
      render('{{ includeInboundPorts .S.Containers }}', {
        S: k8sView(
          {
            containers: [
              { name: 'a', ports: [{ containerPort: 1 }, { containerPort: 53, protocol: 'UDP' }] },
              { name: 'istio-proxy', ports: [{ containerPort: 15090 }] },
            ],
          },
          'spec',
        ),
      }),
      '1,15090',
    );
    assert.equal(
      render('{{ applicationPorts .S.Containers }}', {
        S: k8sView(
          {
            containers: [
              { name: 'a', ports: [{ containerPort: 1 }] },
              { name: 'istio-proxy', ports: [{ containerPort: 15090 }] },
            ],
          },
          'spec',
        ),
      }),
      '1',
    );
  });

  it('strdict, omit, mergeMaps, toJsonMap', () => {
    assert.equal(render('{{ toJsonMap (strdict "a" "1" "b") (omit (strdict "c" "3" "d" "4") "d") }}'), '{"a":"1","b":"","c":"3"}');
    assert.equal(render('{{ toJsonMap (mergeMaps (strdict "a" "1") (strdict "a" "2")) }}'), '{"a":"2"}');
  });

  it('protoToJSON writes only what differs from the default ProxyConfig, map keys sorted', () => {
    const pc = defaultProxyConfig();
    assert.equal(render('{{ protoToJSON .P }}', { P: protoView(ProxyConfigSchema, pc) }), '{}');
    pc.discoveryAddress = 'meshpilot:15012';
    pc.proxyMetadata = { Z: '1', A: '2' };
    assert.equal(
      render('{{ protoToJSON .P }}', { P: protoView(ProxyConfigSchema, pc) }),
      '{"discoveryAddress":"meshpilot:15012","proxyMetadata":{"A":"2","Z":"1"}}',
    );
  });

  it('Go methods on proto views: enum .String, wrapper .GetValue (nil too), getters', () => {
    const pc = defaultProxyConfig();
    const view = protoView(ProxyConfigSchema, pc);
    assert.equal(
      render(
        '{{ .P.InterceptionMode.String }} {{ .P.HoldApplicationUntilProxyStarts.GetValue }} {{ .P.GetStatusPort }} {{ .P.GetServiceCluster }}',
        { P: view },
      ),
      'REDIRECT false 15020 istio-proxy',
    );
    pc.holdApplicationUntilProxyStarts = true;
    assert.equal(render('{{ .P.HoldApplicationUntilProxyStarts.GetValue }}', { P: protoView(ProxyConfigSchema, pc) }), 'true');
    assert.equal(render('{{ index .P.ProxyMetadata "MISSING" | printf "%q" }}', { P: view }), '""');
  });

  it('formatDuration prints as Go time.Duration', () => {
    const d = (seconds: number, nanos = 0) => protoView(DurationSchema, create(DurationSchema, { seconds: BigInt(seconds), nanos }));
    assert.equal(formatDuration(d(23)), '23s');
    assert.equal(formatDuration(d(90)), '1m30s');
    assert.equal(formatDuration(d(3600)), '1h0m0s');
    assert.equal(formatDuration(d(1, 500_000_000)), '1.5s');
    assert.equal(formatDuration(d(0, 5_000_000)), '5ms');
    assert.equal(formatDuration(d(0)), '0s');
  });

  it('appendMultusNetwork: list and JSON forms, no duplicates', () => {
    assert.equal(appendMultusNetwork('', 'default/istio-cni'), 'default/istio-cni');
    assert.equal(appendMultusNetwork('macvlan', 'default/istio-cni'), 'macvlan, default/istio-cni');
    assert.equal(appendMultusNetwork('a, default/istio-cni', 'default/istio-cni'), 'a, default/istio-cni');
    assert.equal(
      appendMultusNetwork('[{"name": "macvlan"}]', 'default/istio-cni'),
      '[{"name": "macvlan"}, {"name": "istio-cni", "namespace": "default"}]',
    );
    assert.equal(
      appendMultusNetwork('[{"name": "istio-cni", "namespace": "default"}]', 'default/istio-cni'),
      '[{"name": "istio-cni", "namespace": "default"}]',
    );
  });

  it('Go printing of floats and proto field names', () => {
    assert.equal(goSprint(15020), '15020');
    assert.equal(goSprint(1e21), '1e+21');
    assert.equal(goSprint(0.00001), '1e-05');
    assert.equal(goSprint(0.5), '0.5');
    assert.equal(goCamelCase('hold_application_until_proxy_starts'), 'HoldApplicationUntilProxyStarts');
    assert.equal(goCamelCase('proxy_admin_port'), 'ProxyAdminPort');
    assert.equal(goCamelCase('x509_cert'), 'X509Cert');
    assert.equal(goCamelCase('_internal'), 'XInternal');
  });

  it('a Go template error names the template, line and column', () => {
    assert.throws(
      () => render('line1\n{{ .A.b.c }}', { A: null }),
      /template: t:2:\d+: executing "t" at <\.A\.b\.c>: nil pointer evaluating interface \{\}\.b/,
    );
  });
});
