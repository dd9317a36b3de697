import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_INIT_ARGS } from '../../../test/support/cni/init-args.js';
import { envName, parseIptablesFlags } from './flags.js';

describe('istio-iptables flags and env', () => {
  it('takes the injection template command line as istio-iptables does', () => {
    const f = parseIptablesFlags(DEFAULT_INIT_ARGS.slice(1), {});
    assert.deepEqual(f.input, {
      proxyPort: '15001',
      inboundCapturePort: '15006',
      proxyUid: '1337',
      interceptionMode: 'REDIRECT',
      outboundIpRanges: '*',
      outboundIpRangesExclude: '',
      inboundPorts: '*',
      inboundPortsExclude: '15090,15021,15020',
    });
    assert.equal(f.help, false);
  });

  it('accepts pflag spellings: -x V, -xV, -x=V, --long V, --long=V; bools bare or =value', () => {
    for (const argv of [['-b', '80'], ['-b80'], ['-b=80'], ['--istio-inbound-ports', '80'], ['--istio-inbound-ports=80']]) {
      assert.equal(parseIptablesFlags(argv, {}).input.inboundPorts, '80', argv.join(' '));
    }
    assert.equal(parseIptablesFlags(['--redirect-dns'], {}).input.redirectDns, true);
    assert.equal(parseIptablesFlags(['--redirect-dns=false'], { REDIRECT_DNS: 'true' }).input.redirectDns, false);
    assert.equal(parseIptablesFlags(['-n'], {}).settings.dryRun, true);
  });

  it('reads each flag’s env var (long name upper-cased) and lets the flag win', () => {
    assert.equal(envName('istio-service-cidr'), 'ISTIO_SERVICE_CIDR');
    const env = {
      ISTIO_SERVICE_CIDR: '10.0.0.0/8',
      ISTIO_SERVICE_EXCLUDE_CIDR: '10.96.0.0/12',
      ISTIO_INBOUND_PORTS: '*',
      ISTIO_LOCAL_EXCLUDE_PORTS: '15020',
      ISTIO_LOCAL_OUTBOUND_PORTS_EXCLUDE: '3306',
      ISTIO_OUTBOUND_PORTS: '80',
      INBOUND_CAPTURE_PORT: '16006',
      PROXY_UID: '1000',
      KUBE_VIRT_INTERFACES: 'eth1',
      ISTIO_EXCLUDE_INTERFACES: 'eth2',
      ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE: '999',
      ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR: '127.0.0.1/8',
    };
    const f = parseIptablesFlags(['-i', '*'], env);
    assert.equal(f.input.outboundIpRanges, '*', 'flag over env');
    assert.equal(f.labels.outboundIpRanges, '-i/--istio-service-cidr');
    assert.equal(f.input.outboundIpRangesExclude, '10.96.0.0/12');
    assert.equal(f.labels.outboundIpRangesExclude, 'ISTIO_SERVICE_EXCLUDE_CIDR (env)');
    assert.equal(f.input.inboundPorts, '*');
    assert.equal(f.input.inboundPortsExclude, '15020');
    assert.equal(f.input.outboundPortsExclude, '3306');
    assert.equal(f.input.outboundPorts, '80');
    assert.equal(f.input.inboundCapturePort, '16006');
    assert.equal(f.input.proxyUid, '1000');
    assert.equal(f.input.rerouteVirtualInterfaces, 'eth1');
    assert.equal(f.input.excludeInterfaces, 'eth2');
    assert.equal(f.input.ownerGroupsExclude, '999');
    assert.equal(f.input.hostIPv4LoopbackCidr, '127.0.0.1/8');
  });

  it('-p has no env var (Istio binds it without one)', () => {
    assert.equal(parseIptablesFlags([], { ENVOY_PORT: '1', ENVOY_PORT_X: '2' }).input.proxyPort, undefined);
  });

  it('older env names: ISTIO_META_DNS_CAPTURE and INVALID_DROP win, INBOUND_INTERCEPTION_MODE is a fallback', () => {
    assert.equal(parseIptablesFlags([], { REDIRECT_DNS: 'false', ISTIO_META_DNS_CAPTURE: 'true' }).input.redirectDns, true);
    assert.equal(parseIptablesFlags([], { INVALID_DROP: '1' }).input.dropInvalid, true);
    assert.equal(parseIptablesFlags([], { ISTIO_DUAL_STACK: 'true' }).settings.dualStack, true);
    assert.equal(parseIptablesFlags([], { INBOUND_INTERCEPTION_MODE: 'TPROXY' }).input.interceptionMode, 'TPROXY');
    const both = parseIptablesFlags([], { INBOUND_INTERCEPTION_MODE: 'TPROXY', ISTIO_INBOUND_INTERCEPTION_MODE: 'REDIRECT' });
    assert.equal(both.input.interceptionMode, 'REDIRECT');
  });

  it('command settings: netns, cleanup, forced binary', () => {
    const f = parseIptablesFlags(['--network-namespace', '/var/run/netns/x', '--cleanup-only'], { FORCE_IPTABLES_BINARY: 'legacy' });
    assert.deepEqual(f.settings, { networkNamespace: '/var/run/netns/x', cleanupOnly: true, forceIptablesBinary: 'legacy' });
  });

  it('rejects what it cannot honour, naming it', () => {
    assert.throws(() => parseIptablesFlags(['--bogus'], {}), /unknown flag --bogus/);
    assert.throws(() => parseIptablesFlags(['-b'], {}), /flag -b needs a value/);
    assert.throws(() => parseIptablesFlags(['extra'], {}), /unexpected argument "extra"/);
    assert.throws(() => parseIptablesFlags(['--native-nftables'], {}), /--native-nftables is not supported/);
    assert.throws(() => parseIptablesFlags(['--redirect-dns=maybe'], {}), /invalid --redirect-dns value "maybe"/);
    assert.throws(() => parseIptablesFlags([], { CAPTURE_ALL_DNS: 'yes' }), /invalid CAPTURE_ALL_DNS \(env\) value "yes"/);
  });

  it('accepts and ignores Istio flags that have no effect here', () => {
    const f = parseIptablesFlags(['--reconcile', '--force-apply', '--log_output_level=default:info', '--log_as_json'], {});
    assert.deepEqual([f.input, f.settings], [{}, {}]);
  });

  it("istio-validation's flags: --run-validation, --skip-rule-apply, probe port and timeout (flag or env)", () => {
    const f = parseIptablesFlags(['--run-validation', '--skip-rule-apply', '--iptables-probe-port', '15099'], {
      PROBE_TIMEOUT: '2s',
      IPTABLES_PROBE_PORT: '1',
    });
    assert.deepEqual(f.settings, { runValidation: true, skipRuleApply: true, probePort: '15099', probeTimeout: '2s' });
    assert.deepEqual(parseIptablesFlags([], { RUN_VALIDATION: 'true' }).settings, { runValidation: true });
  });
});
