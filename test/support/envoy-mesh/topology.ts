/**
 * The network of the Envoy mesh tests: a hub namespace holding a bridge, and one namespace per
 * pod joined to it by a veth pair, each with its pod IP. Everything stays inside namespaces this
 * process created: the bridge is in the hub, and a pod's only routes are its subnet and the
 * service VIP range, both on its own veth (VIPs need a route so a connect() gets as far as the
 * nat OUTPUT chain, whose REDIRECT sends it to the sidecar before it ever leaves the pod).
 */
import { connect, createNetns, type Netns } from '../cni/netns.js';
import { meshpilotInNetns } from '../cni/meshpilot-in-netns.js';
import { DEFAULT_INIT_ARGS } from '../cni/init-args.js';

export const PROXY_UID = 1337;
export const POD_PREFIX = 24;
/** Service VIPs (ServiceEntry addresses) live here; pods resolve service names to them through /etc/hosts. */
export const VIP_CIDR = '10.96.0.0/16';

/**
 * What Istio's injector gives istio-init (`istio-iptables -p 15001 -z 15006 -u 1337 -m REDIRECT
 * -i '*' -x "" -b '*' -d 15090,15021,15020`): capture all outbound and inbound TCP, except the
 * proxy's own traffic and its status/metrics ports.
 */
export const INIT_CONTAINER_FLAGS: readonly string[] = DEFAULT_INIT_ARGS.slice(1, -1);

export interface Pod {
  readonly name: string;
  readonly ns: Netns;
  readonly ip: string;
  /** Runs `meshpilot iptables` inside the pod's namespace, as the istio-init container does. */
  capture(flags?: readonly string[]): Promise<void>;
  /** The pod's /etc/hosts (bind-mounted by `ip netns exec`). */
  setHosts(entries: ReadonlyMap<string, string>): void;
}

export interface PodNetwork {
  readonly hub: Netns;
  addPod(name: string, ip: string): Pod;
  remove(): void;
}

export function createPodNetwork(): PodNetwork {
  const hub = createNetns('hub');
  hub.run('ip', 'link', 'add', 'br0', 'type', 'bridge');
  hub.run('ip', 'link', 'set', 'br0', 'up');
  const namespaces: Netns[] = [hub];
  return {
    hub,
    addPod(name, ip) {
      const ns = createNetns('pod');
      namespaces.push(ns);
      const { aIf, bIf } = connect(hub, [], ns, [`${ip}/${POD_PREFIX}`]);
      hub.run('ip', 'link', 'set', aIf, 'master', 'br0');
      ns.run('ip', 'route', 'add', VIP_CIDR, 'dev', bIf);
      return {
        name,
        ns,
        ip,
        async capture(flags = INIT_CONTAINER_FLAGS) {
          const r = await meshpilotInNetns(ns, ['iptables', ...flags]);
          if (r.code !== 0) throw new Error(`meshpilot iptables in ${name} exited ${r.code}: ${r.stderr}${r.stdout}`);
        },
        setHosts(entries) {
          const lines = ['127.0.0.1 localhost', ...[...entries].map(([host, addr]) => `${addr} ${host}`)];
          ns.etcFile('hosts', `${lines.join('\n')}\n`);
        },
      };
    },
    remove() {
      for (const ns of namespaces.reverse()) ns.remove();
    },
  };
}
