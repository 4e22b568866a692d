/**
 * What in a log line could be a credential (test/support/log-capture.ts runs it over every line the
 * integration suite writes): a string in the form of one of the service's secrets, a bearer header,
 * a session token, a password hash, or any value under a key named like a credential; and what in
 * it repeats a request body.
 */
const SECRET_FORMS = [
  /awk_[A-Za-z0-9_-]{20,}/, // API key
  /whsec_[A-Za-z0-9+/=_-]{20,}/, // webhook signing secret
  /awi_[A-Za-z0-9_-]{20,}/, // invitation token
  /aws_setup_[A-Za-z0-9_-]{20,}/, // setup token
  /Bearer\s+\S{8,}/i,
  /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/, // a JWT (next-auth session)
  /\$argon2(id|i|d)\$/, // a password hash
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The strings of a request body worth looking for in log lines: 12 characters or more, and not an
 * id or a time (those name things, and log lines name things by id too).
 */
export function bodyStrings(body: unknown, out: Set<string> = new Set()): Set<string> {
  // An explicit stack, and a bound: the suite sends bodies 100,000 levels deep and 200,000 items long.
  const todo: unknown[] = [body];
  for (let seen = 0; todo.length > 0 && seen < 10_000; seen++) {
    const value = todo.pop();
    if (typeof value === 'string') {
      if (value.length >= 12 && !UUID.test(value) && Number.isNaN(Date.parse(value)))
        out.add(value.length > 200 ? value.slice(0, 200) : value);
    } else if (value && typeof value === 'object') todo.push(...Object.values(value).slice(0, 1_000));
  }
  return out;
}

/** Which of `sent` (request bodies' strings) a log line holds. */
export function bodyStringsIn(line: string, sent: Iterable<string>): string[] {
  const found: string[] = [];
  for (const value of sent) if (line.includes(JSON.stringify(value).slice(1, -1))) found.push(value);
  return found;
}
