/**
 * ztunnel's two types (istiod's pilot/pkg/xds/workload.go): istio.workload.Address — every
 * workload and service of the ambient index — and istio.security.Authorization. ztunnel subscribes
 * to both by wildcard on Delta ADS; the Delta stream sends only the resources whose content
 * changed and removes the names that went away, so a generator returns the whole current list
 * (one shared list per snapshot) and each Address is encoded once for as long as it is unchanged.
 */
import { toBinary } from '@bufbuild/protobuf';
import { AuthorizationSchema, type Authorization } from '../../gen/workloadapi/security/authorization_pb.js';
import { AddressSchema, type Address } from '../../gen/workloadapi/workload_pb.js';
import { ztunnelAuthorizations, type AmbientIndex, type PushContext } from '../../model/index.js';
import { makeResource, type Generator, type GeneratorRegistry, type WatchedResourceView, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';

/** Encoded once per Address object: the index keeps an unchanged Address the same object. */
const encodedAddresses = new WeakMap<Address, XdsResource>();
/** The whole list per index (every ztunnel of a snapshot shares it, and its Delta plan). */
const addressLists = new WeakMap<AmbientIndex, readonly XdsResource[]>();
const authorizationLists = new WeakMap<PushContext, readonly XdsResource[]>();

function encodedAddress(name: string, address: Address): XdsResource {
  let r = encodedAddresses.get(address);
  if (!r || r.name !== name) {
    r = makeResource(name, TypeUrl.Address, toBinary(AddressSchema, address));
    encodedAddresses.set(address, r);
  }
  return r;
}

function addressList(index: AmbientIndex): readonly XdsResource[] {
  let list = addressLists.get(index);
  if (!list) {
    list = Object.freeze(index.addresses().map((a) => encodedAddress(a.name, a.address)));
    addressLists.set(index, list);
  }
  return list;
}

/** The named subset of a list (an on-demand subscription); the whole list for a wildcard one. */
function subscribed(list: readonly XdsResource[], watched: WatchedResourceView): readonly XdsResource[] {
  return watched.wildcard ? list : list.filter((r) => watched.names.has(r.name));
}

export interface ZtunnelGeneratorOptions {
  /** The cluster id written into workload uids (istiod's CLUSTER_ID, default `Kubernetes`). */
  readonly clusterId: string;
}

/** istio.workload.Address: the ambient index, named by uid (workloads) and `namespace/hostname` (services). */
export function addressGenerator(o: ZtunnelGeneratorOptions): Generator {
  return {
    deltaOnly: true,
    generate(_proxy, watched, push) {
      return subscribed(addressList(push.ambient(o.clusterId)), watched);
    },
  };
}

/** The name ztunnel knows a policy by: `namespace/name`. */
const authorizationName = (a: Authorization): string => `${a.namespace}/${a.name}`;

/** istio.security.Authorization: the policies ztunnel enforces. */
export const authorizationGenerator: Generator = {
  deltaOnly: true,
  generate(_proxy, watched, push) {
    let list = authorizationLists.get(push);
    if (!list) {
      list = Object.freeze(
        ztunnelAuthorizations(push).map((a) => makeResource(authorizationName(a), TypeUrl.Authorization, toBinary(AuthorizationSchema, a))),
      );
      authorizationLists.set(push, list);
    }
    return subscribed(list, watched);
  },
};

/** Registers ztunnel's types under `ztunnel/<typeUrl>` (other proxies are not served them). */
export function registerZtunnelGenerators(registry: GeneratorRegistry, o: ZtunnelGeneratorOptions): GeneratorRegistry {
  return registry
    .register(`ztunnel/${TypeUrl.Address}`, addressGenerator(o))
    .register(`ztunnel/${TypeUrl.Authorization}`, authorizationGenerator);
}
