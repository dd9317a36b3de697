/**
 * Last line of defence for logs: whatever a message or field carries (a validation error echoing
 * a value, a request body in an error), PEM private keys, CSRs and JWTs are replaced by a marker
 * before the line is written. Callers should not log them in the first place; this catches the
 * paths nobody thought of (a user pasting a key into a VirtualService host, say).
 */

const PEM_PRIVATE_KEY = /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g;
const PEM_CSR = /-----BEGIN (NEW )?CERTIFICATE REQUEST-----[\s\S]*?(?:-----END (?:NEW )?CERTIFICATE REQUEST-----|$)/g;
/** header.payload[.signature]: both base64url JSON objects, so both start `eyJ`. */
const JWT = /eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?/g;

/** `text` with every private key, CSR and JWT replaced by `[REDACTED …]`. */
export function redactSecrets(text: string): string {
  // Cheap test first: nearly every log string has neither marker.
  if (!text.includes('-----BEGIN') && !text.includes('eyJ')) return text;
  return text.replace(PEM_PRIVATE_KEY, '[REDACTED PRIVATE KEY]').replace(PEM_CSR, '[REDACTED CSR]').replace(JWT, '[REDACTED JWT]');
}
