import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentOptions } from '../agent/options.js';
import { agentArgsFromPilotAgentProxy } from './pilot-agent-args.js';

/** The istio-proxy container's args as Istio's sidecar template renders them (namespace expanded by the kubelet). */
const INJECTED = [
  'proxy',
  'sidecar',
  '--domain',
  'shop.svc.cluster.local',
  '--proxyLogLevel=warning',
  '--proxyComponentLogLevel=misc:error',
  '--log_output_level=default:info',
];

describe('pilot-agent proxy args → meshpilot agent', () => {
  it("the injected istio-proxy container's args become agent flags the agent accepts", () => {
    const args = agentArgsFromPilotAgentProxy(INJECTED.slice(1));
    assert.deepEqual(args, [
      '--proxyType',
      'sidecar',
      '--domain',
      'cluster.local',
      '--proxyLogLevel',
      'warning',
      '--proxyComponentLogLevel',
      'misc:error',
      '--logLevel',
      'info',
    ]);
    const opts = parseAgentOptions([...args, ...agentArgsFromPilotAgentProxy(['sidecar', '--concurrency', '4']).slice(2)], {
      POD_NAME: 'web-1',
      POD_NAMESPACE: 'shop',
      INSTANCE_IP: '10.1.0.5',
    });
    assert.deepEqual([opts.proxyType, opts.domain, opts.logLevel], ['sidecar', 'cluster.local', 'info']);
    assert.deepEqual(
      [opts.envoy.logLevel, opts.envoy.componentLogLevel, opts.envoy.concurrency],
      ['warning', 'misc:error', 4],
      'Envoy flags reach Envoy',
    );
  });

  it('router (gateways), Istio flags without an agent counterpart, and log levels', () => {
    assert.deepEqual(
      agentArgsFromPilotAgentProxy([
        'router',
        '--domain',
        'example.internal',
        '--stsPort=15463',
        '--log_as_json',
        '--log_output_level',
        'ads:debug,all:fatal',
      ]),
      ['--proxyType', 'router', '--domain', 'example.internal', '--logLevel', 'error'],
    );
    assert.deepEqual(agentArgsFromPilotAgentProxy([]), ['--proxyType', 'sidecar']);
  });

  it('refuses what it cannot honour, naming it', () => {
    assert.throws(() => agentArgsFromPilotAgentProxy(['ztunnel']), /proxy type "ztunnel" is not sidecar, router or waypoint/);
    // Istio's waypoint template runs `proxy waypoint`.
    assert.deepEqual(agentArgsFromPilotAgentProxy(['waypoint']), ['--proxyType', 'waypoint']);
    assert.throws(() => agentArgsFromPilotAgentProxy(['sidecar', '--bogus=1']), /pilot-agent proxy flag --bogus=1 is not supported/);
    assert.throws(() => agentArgsFromPilotAgentProxy(['sidecar', '--domain']), /flag --domain needs a value/);
    assert.throws(() => agentArgsFromPilotAgentProxy(['sidecar', '--log_output_level=default:loud']), /level "loud" is not one of/);
  });
});
