#!/usr/bin/env bash
# Regenerates src/gen/ (protobuf-es v2) from the vendored Istio protos (proto/istio) and the
# Envoy/xds/googleapis/protoc-gen-validate protos shipped in @grpc/grpc-js-xds.
# Generated code is never edited by hand: change this list and run `npm run gen`.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=node_modules/@grpc/grpc-js-xds/deps
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# buf needs its modules inside one workspace; link them in.
ln -s "$PWD/$deps/envoy-api" "$work/envoy"
ln -s "$PWD/$deps/xds" "$work/xds"
ln -s "$PWD/$deps/googleapis" "$work/googleapis"
ln -s "$PWD/proto/pgv" "$work/pgv"
ln -s "$PWD/proto/istio" "$work/istio"
ln -s "$PWD/proto/otel" "$work/otel"
ln -s "$PWD/proto/istio-workload" "$work/istio-workload"
cat > "$work/buf.yaml" <<'YAML'
version: v2
modules:
  - path: envoy
  - path: xds
  - path: googleapis
  - path: pgv
  - path: istio
  - path: otel
  - path: istio-workload
YAML
files=(
  envoy/envoy/service/discovery/v3/ads.proto
  envoy/envoy/service/discovery/v3/discovery.proto
  envoy/envoy/config/cluster/v3/cluster.proto
  envoy/envoy/config/listener/v3/listener.proto
  envoy/envoy/config/route/v3/route.proto
  envoy/envoy/config/endpoint/v3/endpoint.proto
  envoy/envoy/config/bootstrap/v3/bootstrap.proto
  envoy/envoy/admin/v3/config_dump.proto
  envoy/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto
  envoy/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto
  envoy/envoy/extensions/filters/network/rbac/v3/rbac.proto
  envoy/envoy/extensions/filters/http/router/v3/router.proto
  envoy/envoy/extensions/filters/http/fault/v3/fault.proto
  envoy/envoy/extensions/filters/http/rbac/v3/rbac.proto
  envoy/envoy/extensions/filters/http/jwt_authn/v3/config.proto
  envoy/envoy/extensions/filters/listener/http_inspector/v3/http_inspector.proto
  envoy/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto
  envoy/envoy/extensions/filters/listener/original_dst/v3/original_dst.proto
  envoy/envoy/extensions/transport_sockets/tls/v3/tls.proto
  envoy/envoy/extensions/transport_sockets/tls/v3/secret.proto
  envoy/envoy/extensions/load_balancing_policies/ring_hash/v3/ring_hash.proto
  envoy/envoy/service/status/v3/csds.proto
  envoy/envoy/service/secret/v3/sds.proto
  envoy/envoy/extensions/retry/host/previous_hosts/v3/previous_hosts.proto
  envoy/envoy/extensions/upstreams/http/v3/http_protocol_options.proto
  envoy/envoy/extensions/filters/http/cors/v3/cors.proto
  envoy/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.proto
  envoy/envoy/extensions/filters/network/sni_cluster/v3/sni_cluster.proto
  envoy/envoy/extensions/path/match/uri_template/v3/uri_template_match.proto
  envoy/envoy/extensions/access_loggers/file/v3/file.proto
  envoy/envoy/extensions/access_loggers/grpc/v3/als.proto
  envoy/envoy/extensions/access_loggers/open_telemetry/v3/logs_service.proto
  envoy/envoy/extensions/access_loggers/filters/cel/v3/cel.proto
  envoy/envoy/extensions/formatter/req_without_query/v3/req_without_query.proto
  envoy/envoy/config/trace/v3/zipkin.proto
  envoy/envoy/config/trace/v3/opentelemetry.proto
  envoy/envoy/config/trace/v3/skywalking.proto
  envoy/envoy/config/trace/v3/datadog.proto
  envoy/envoy/extensions/request_id/uuid/v3/uuid.proto
  istio/envoy/extensions/stats/config.proto
  istio/envoy/config/filter/http/alpn/v2alpha1/config.proto
  envoy/envoy/extensions/filters/http/grpc_stats/v3/config.proto
  envoy/envoy/extensions/network/dns_resolver/cares/v3/cares_dns_resolver.proto
  xds/udpa/type/v1/typed_struct.proto
  xds/xds/type/v3/typed_struct.proto
  envoy/envoy/extensions/filters/http/set_filter_state/v3/set_filter_state.proto
  envoy/envoy/extensions/filters/network/set_filter_state/v3/set_filter_state.proto
  envoy/envoy/extensions/transport_sockets/internal_upstream/v3/internal_upstream.proto
  envoy/envoy/extensions/matching/common_inputs/network/v3/network_inputs.proto
  xds/xds/type/matcher/v3/ip.proto
  istio/networking/v1alpha3/destination_rule.proto
  istio/networking/v1alpha3/gateway.proto
  istio/networking/v1alpha3/service_entry.proto
  istio/networking/v1alpha3/sidecar.proto
  istio/networking/v1alpha3/virtual_service.proto
  istio/networking/v1alpha3/workload_entry.proto
  istio/networking/v1alpha3/workload_group.proto
  istio/networking/v1alpha3/envoy_filter.proto
  istio/security/v1beta1/authorization_policy.proto
  istio/security/v1beta1/peer_authentication.proto
  istio/security/v1beta1/request_authentication.proto
  istio/security/v1alpha1/ca.proto
  istio/telemetry/v1alpha1/telemetry.proto
  istio/extensions/v1alpha1/wasm.proto
  istio/mesh/v1alpha1/config.proto
  istio-workload/workloadapi/workload.proto
  istio-workload/workloadapi/security/authorization.proto
  istio-workload/dns/proto/nds.proto
)
cat > "$work/buf.gen.yaml" <<YAML
version: v2
plugins:
  - local: $PWD/node_modules/.bin/protoc-gen-es
    out: $PWD/src/gen.new
    include_imports: true
    opt: [target=ts, import_extension=js]
YAML
paths=()
for f in "${files[@]}"; do paths+=(--path "$f"); done
rm -rf src/gen.new
(cd "$work" && "$OLDPWD/node_modules/.bin/buf" generate "${paths[@]}")
# Envoy's Wasm filter protos come from a newer descriptor image (proto/envoy-wasm/SOURCE.md).
sed -e '/include_imports/d' "$work/buf.gen.yaml" > "$work/buf.gen.wasm.yaml"
"$PWD/node_modules/.bin/buf" generate proto/envoy-wasm/wasm-image.binpb --template "$work/buf.gen.wasm.yaml" \
  --path envoy/extensions/wasm/v3/wasm.proto --path envoy/extensions/filters/http/wasm/v3/wasm.proto
rm -rf src/gen && mv src/gen.new src/gen
echo "generated $(find src/gen -name '*.ts' | wc -l) files into src/gen"
