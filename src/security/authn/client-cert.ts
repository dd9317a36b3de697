/**
 * Client-certificate authentication (renewal, and ADS over mTLS): the TLS layer has verified the
 * chain against the CA's trust bundle; here the leaf must carry SPIFFE IDs of our trust domain,
 * which become the caller's identities. Other URIs, DNS names and foreign trust domains are not
 * identities here.
 */
import { x509 } from '../crypto.js';
import { parseSpiffeId } from '../spiffe.js';
import { sanUris } from '../ca/certificates.js';
import { authFail, authOk, type Authenticator } from './authenticator.js';

export function clientCertAuthenticator(trustDomain: string): Authenticator {
  return {
    type: 'ClientCertAuthenticator',
    authenticate(ctx) {
      const peer = ctx.peerCertificate;
      if (!peer?.raw) return authFail('no verified client certificate is presented');
      const now = Date.now();
      if (Date.parse(peer.valid_to) <= now || Date.parse(peer.valid_from) > now)
        return authFail('the client certificate is not within its validity');
      let uris: string[];
      try {
        uris = sanUris(new x509.X509Certificate(peer.raw));
      } catch (err) {
        return authFail(`the client certificate does not parse (${(err as Error).message})`);
      }
      const td = trustDomain;
      const ids = uris.filter((u) => parseSpiffeId(u)?.trustDomain === td);
      if (ids.length === 0) {
        return authFail(
          uris.length
            ? `no SPIFFE ID of trust domain ${td} in the client certificate (has ${uris.join(', ')})`
            : 'the client certificate has no SPIFFE ID',
        );
      }
      return authOk({ source: 'ClientCertificate', identities: ids });
    },
  };
}
