#!/usr/bin/env bash
# Generates ts-proto code for the proto-encode benchmark into bench/proto/ts-proto-gen/ from the
# same Envoy protos (shipped in @grpc/grpc-js-xds) that scripts/gen-protos.sh feeds protobuf-es.
# Only the messages the benchmark encodes are listed; their imports come along (include_imports).
set -euo pipefail
cd "$(dirname "$0")/../.."
deps=node_modules/@grpc/grpc-js-xds/deps
out=bench/proto/ts-proto-gen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# buf needs its modules inside one workspace; link them in (same layout as scripts/gen-protos.sh).
ln -s "$PWD/$deps/envoy-api" "$work/envoy"
ln -s "$PWD/$deps/xds" "$work/xds"
ln -s "$PWD/$deps/googleapis" "$work/googleapis"
ln -s "$PWD/proto/pgv" "$work/pgv"
cat > "$work/buf.yaml" <<'YAML'
version: v2
modules:
  - path: envoy
  - path: xds
  - path: googleapis
  - path: pgv
YAML
files=(
  envoy/envoy/config/cluster/v3/cluster.proto
  envoy/envoy/config/listener/v3/listener.proto
  envoy/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto
  envoy/envoy/extensions/filters/http/router/v3/router.proto
  envoy/envoy/extensions/filters/http/fault/v3/fault.proto
  envoy/envoy/extensions/filters/http/rbac/v3/rbac.proto
  envoy/envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto
  envoy/envoy/extensions/filters/listener/http_inspector/v3/http_inspector.proto
  envoy/envoy/extensions/transport_sockets/tls/v3/tls.proto
)
cat > "$work/buf.gen.yaml" <<YAML
version: v2
plugins:
  - local: $PWD/node_modules/.bin/protoc-gen-ts_proto
    out: $PWD/$out.new
    include_imports: true
    opt:
      - outputServices=false
      - esModuleInterop=true
      - importSuffix=.js
      - useExactTypes=false
      - forceLong=number
      - outputJsonMethods=false
YAML
paths=()
for f in "${files[@]}"; do paths+=(--path "$f"); done
rm -rf "$out.new"
(cd "$work" && "$OLDPWD/node_modules/.bin/buf" generate "${paths[@]}")
rm -rf "$out" && mv "$out.new" "$out"
echo "generated $(find "$out" -name '*.ts' | wc -l) files ($(du -sh "$out" | cut -f1)) into $out"
