/**
 * The istio-iptables command line Istio's injection template renders for the istio-init container
 * with default values (the first element is the command).
 */
export const DEFAULT_INIT_ARGS: readonly string[] = [
  'istio-iptables',
  '-p',
  '15001',
  '-z',
  '15006',
  '-u',
  '1337',
  '-m',
  'REDIRECT',
  '-i',
  '*',
  '-x',
  '',
  '-b',
  '*',
  '-d',
  '15090,15021,15020',
  '--log_output_level=default:info',
];
