import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../../../src/gen/envoy/config/core/v3/base_pb.js';
import { GatewayIndex } from '../../../src/model/indexes/gateway-index.js';
import { parseProxy, type Proxy } from '../../../src/model/proxy.js';
import { PushContext } from '../../../src/model/push-context.js';
import { gatewayContext, type GatewayContext } from '../../../src/networking/gateway/gateway-context.js';
import { pushOf } from '../config-fixture.js';

/** Test-only helpers: objects go through the real validation path (MemorySource → ConfigStore). */

/** A self-signed EC certificate for bookinfo.example.com and its key (openssl, valid until 2125). */
export const SERVER_CERT = `-----BEGIN CERTIFICATE-----
MIIBlTCCATugAwIBAgIUCTVdx0ZEj0vRbq0NNqZg/kGcYBwwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUYm9va2luZm8uZXhhbXBsZS5jb20wIBcNMjYxMjAyMTkxMDIx
WhgPMjEyNjExMDgxOTEwMjFaMB8xHTAbBgNVBAMMFGJvb2tpbmZvLmV4YW1wbGUu
Y29tMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE3lJi+eBWCXQZBUgyZOGIirQ4
baB1th7arBW5BBQYSD2mxDM9ERdG5sOwnXpJbqg8uDK+3NOk2VgNbhgc6iasnaNT
MFEwHQYDVR0OBBYEFNSU62PjXTbFbcTJ0W+zxkZ993CLMB8GA1UdIwQYMBaAFNSU
62PjXTbFbcTJ0W+zxkZ993CLMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID
SAAwRQIgeS2cSxTCkGtcZq7QPQnC7RCmrbV4Wc+nmp1c+F9cF48CIQCg3rhQzsp9
yYm+ffggUJ7mKcYQccoRdWWigt69fOZsPQ==
-----END CERTIFICATE-----\n`;
export const SERVER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeJCwrrOFYjEUBYBj
jXhw2JVo8/3zDZUBOtlGdWLTNSmhRANCAATeUmL54FYJdBkFSDJk4YiKtDhtoHW2
HtqsFbkEFBhIPabEMz0RF0bmw7CdekluqDy4Mr7c06TZWA1uGBzqJqyd
-----END PRIVATE KEY-----\n`;
/** A self-signed client CA. */
export const CLIENT_CA = `-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUQpRb5R5XfkSc60TTvjrRIFbKrr0wCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJY2xpZW50LWNhMCAXDTI2MTIwMjE5MTAyMVoYDzIxMjYxMTA4
MTkxMDIxWjAUMRIwEAYDVQQDDAljbGllbnQtY2EwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASwbRwqMXDu1tgZka0TtiBz/I15j7ibfCW675KLotmZsHZnwfNSk6Z9
ryJ8z9CXA43rK4QkTE6bmJ30VT8wWecEo1MwUTAdBgNVHQ4EFgQUMkDWHgEqgzfP
5vEK3obR6TqS38gwHwYDVR0jBBgwFoAUMkDWHgEqgzfP5vEK3obR6TqS38gwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEAxsG7VuQnn7R5KWdTvDVJ
MDHatU9ZQ+NaLrMRx3qSfQ8CICwTLd4x9C8HlknzTv9Yh2q/3QhptW9bUwfNh5DP
w352
-----END CERTIFICATE-----\n`;

export const NS = 'istio-system';
export const INGRESS_LABELS = { istio: 'ingressgateway', app: 'istio-ingressgateway' };

export function pushFor(objects: readonly Record<string, unknown>[]): PushContext {
  return pushOf(objects);
}

export function router(labels: Record<string, string> = INGRESS_LABELS, namespace = NS): Proxy {
  const r = parseProxy(
    create(NodeSchema, {
      id: `router~10.0.0.9~istio-ingressgateway-abc.${namespace}~${namespace}.svc.cluster.local`,
      metadata: { LABELS: labels },
    }),
  );
  assert.ok(r.ok);
  return r.value;
}

/** The gateway context of a router built from `objects` through GatewayIndex. */
export function contextFor(objects: readonly Record<string, unknown>[], proxy: Proxy = router()): GatewayContext {
  const push = pushFor(objects);
  return gatewayContext(push, proxy, GatewayIndex.build(push.config));
}

export function gateway(
  name: string,
  servers: unknown[],
  opts: { namespace?: string; selector?: Record<string, string> } = {},
): Record<string, unknown> {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: opts.namespace ?? NS },
    spec: { selector: opts.selector ?? { istio: 'ingressgateway' }, servers },
  };
}

export function virtualService(name: string, namespace: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name, namespace }, spec };
}

export function serviceEntry(name: string, namespace: string, host: string, ports: unknown[]): Record<string, unknown> {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace },
    spec: { hosts: [host], location: 'MESH_INTERNAL', resolution: 'STATIC', ports, endpoints: [{ address: '10.1.0.1' }] },
  };
}
