import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { Cluster_LbPolicy } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { LoadBalancerSettings_SimpleLB, LoadBalancerSettingsSchema } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { buildEdsCluster } from './cluster-builder.js';

const cluster = (simple: LoadBalancerSettings_SimpleLB) =>
  buildEdsCluster({
    name: 'outbound|80||a.default.svc.cluster.local',
    policy: { loadBalancer: create(LoadBalancerSettingsSchema, { lbPolicy: { case: 'simple', value: simple } }) },
    mesh: defaultMeshConfig(),
    defaultLbPolicy: Cluster_LbPolicy.ROUND_ROBIN,
  });

test('proxyless clusters never name an LB policy gRPC lacks (grpc-js NACKs LEAST_REQUEST)', () => {
  for (const simple of [
    LoadBalancerSettings_SimpleLB.LEAST_REQUEST,
    LoadBalancerSettings_SimpleLB.RANDOM,
    LoadBalancerSettings_SimpleLB.PASSTHROUGH,
    LoadBalancerSettings_SimpleLB.ROUND_ROBIN,
  ]) {
    assert.equal(cluster(simple).lbPolicy, Cluster_LbPolicy.ROUND_ROBIN, LoadBalancerSettings_SimpleLB[simple]);
  }
});
