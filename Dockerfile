# syntax=docker/dockerfile:1
# The meshpilot image: the control plane (`meshpilot discovery`, what the meshpilot chart runs),
# the node agent (`meshpilot agent`), the CNI installer (`meshpilot cni install`, what the cni
# chart's DaemonSet runs, with the bundled meshpilot-cni plugin) and meshctl.
# Not built in this repository's CI: no base image registry is reachable there (docs/install.md);
# test/e2e/container-image.test.ts replays its steps without a container runtime.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: dev dependencies, tsc, and the CNI plugin bundle (esbuild comes with tsx) ---
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm run build:cni

# --- runtime: production dependencies only ---
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
# istio-init (`meshpilot istio-iptables`, the injected init container without CNI) drives these.
RUN apt-get update && apt-get install -y --no-install-recommends iptables iproute2 && rm -rf /var/lib/apt/lists/*
WORKDIR /usr/lib/meshpilot
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /src/dist ./dist
# Read at run time: the injector's built-in templates, the web console's page, script and
# stylesheet (served as they are, no build step), the charts (meshctl) and what their symlinks
# point at (Istio's CRDs, the injection templates, the profiles).
COPY src/inject/templates ./src/inject/templates
COPY src/bootstrap/console/assets ./src/bootstrap/console/assets
COPY proto/istio/kubernetes ./proto/istio/kubernetes
COPY manifests ./manifests
RUN for bin in meshpilot:dist/src/cli/meshpilot.js meshctl:dist/src/meshctl/main.js meshpilot-cni:dist/cni/meshpilot-cni; do \
      printf '#!/bin/sh\nexec node /usr/lib/meshpilot/%s "$@"\n' "${bin#*:}" > "/usr/local/bin/${bin%%:*}"; \
      chmod 0755 "/usr/local/bin/${bin%%:*}"; \
    done
# A bare `docker run` serves the Istio YAML mounted at /etc/meshpilot/config (file-only mode), with
# its CA state in /var/lib/meshpilot/ca.
RUN mkdir -p /etc/meshpilot/config /var/lib/meshpilot && chown 1337:1337 /var/lib/meshpilot
# Istio's uid: the proxies' capture rules exclude 1337, and istiod's chart runs non-root. The CNI
# DaemonSet runs as root by its own securityContext (it writes the node's CNI directories).
USER 1337:1337
ENTRYPOINT ["meshpilot"]
# Every interface, on istiod's ports, as the chart's args (meshpilot's own defaults are loopback only,
# which a container's published ports cannot reach). A command given to `docker run` replaces these.
CMD ["discovery", "--configDir=/etc/meshpilot/config", "--caDir=/var/lib/meshpilot/ca", \
     "--grpcAddr=:15010", "--secureGRPCAddr=:15012", "--httpAddr=:8080", "--monitoringAddr=:15014", "--httpsAddr=:15017"]
