/**
 * A service with one WorkloadEntry in network n1 and one in n2, for tests of how a sidecar in n1
 * reaches n2 (through n2's gateway once meshNetworks names one, directly without).
 */
export const TWO_NETWORK_HOST = 'api.example.com';
export const TWO_NETWORK_CLA = `outbound|80||${TWO_NETWORK_HOST}`;

const doc = (kind: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'networking.istio.io/v1',
  kind,
  metadata: { name, namespace: 'default' },
  spec,
});

export const TWO_NETWORK_CONFIG = [
  doc('ServiceEntry', 'api', {
    hosts: [TWO_NETWORK_HOST],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }],
    workloadSelector: { labels: { app: 'api' } },
  }),
  doc('WorkloadEntry', 'api-n1', { address: '10.1.0.1', network: 'n1', serviceAccount: 'api', labels: { app: 'api' } }),
  doc('WorkloadEntry', 'api-n2', { address: '10.2.0.1', network: 'n2', serviceAccount: 'api', labels: { app: 'api' } }),
];

/** A sidecar in network n1. */
export const N1_SIDECAR = {
  id: 'sidecar~10.1.0.9~client.default~default.svc.cluster.local',
  metadata: { NAMESPACE: 'default', NETWORK: 'n1' },
};
