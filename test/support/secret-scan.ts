/**
 * What in a log line could be a credential (test/support/log-capture.ts runs it over every line the
 * integration suite writes): a string in the form of one of the service's secrets, a bearer header,
 * a session token, or any value under a key named like a credential.
 */
const SECRET_FORMS = [
  /awk_[A-Za-z0-9_-]{20,}/, // API key
  /whsec_[A-Za-z0-9+/=_-]{20,}/, // webhook signing secret
  /awi_[A-Za-z0-9_-]{20,}/, // invitation token
  /aws_setup_[A-Za-z0-9_-]{20,}/, // setup token
  /Bearer\s+\S{8,}/i,
  /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/, // a JWT (next-auth session)
];
const SECRET_KEYS = /^(password|new_?password|secret|token|cookie|authorization|api_?key|session(_?token)?)$/i;

function secretsIn(value: unknown, path: string, out: string[]): void {
  if (typeof value === 'string') {
    for (const form of SECRET_FORMS) if (form.test(value)) out.push(`${path}: ${form.source.slice(0, 20)}…`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => secretsIn(v, `${path}[${i}]`, out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (SECRET_KEYS.test(k) && v !== null && v !== '') out.push(`${path}.${k}: a value under a credential's name`);
      secretsIn(v, `${path}.${k}`, out);
    }
  }
}

/** Where in `value` (a parsed log line) something could be a credential; empty when nothing. */
export function credentialsIn(value: unknown): string[] {
  const out: string[] = [];
  secretsIn(value, 'line', out);
  return out;
}
