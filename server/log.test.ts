import { describe, expect, it } from 'vitest';
import { describeError, redactDatabaseErrorsInConsole, stackFrames } from './log';

/** A failed insert as Drizzle throws it over postgres.js: its message lists the parameters. */
function failedInsert(driverFields: Record<string, unknown>) {
  const driver = Object.assign(new Error('duplicate key value violates unique constraint "users_email_key"'), driverFields);
  const params = ['someone@example.com', '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA'];
  return Object.assign(new Error(`Failed query: insert into "users" ("email", "password_hash") values ($1, $2)\nparams: ${params}`), {
    query: 'insert into "users" ("email", "password_hash") values ($1, $2)',
    params,
    cause: driver,
  });
}

describe('describeError', () => {
  it('names a failed query by its statement and its database error by SQLSTATE, constraint and table', () => {
    const postgresJs = failedInsert({
      code: '23505',
      constraint_name: 'users_email_key',
      table_name: 'users',
      detail: 'Key (email)=(someone@example.com) already exists.',
    });
    expect(describeError(postgresJs)).toBe(
      'Failed query: insert into "users" ("email", "password_hash") values ($1, $2); caused by database error 23505 (constraint users_email_key, table users)',
    );
    const pglite = failedInsert({ code: '23505', constraint: 'users_email_key', table: 'users' });
    expect(describeError(pglite)).toContain('database error 23505 (constraint users_email_key, table users)');
  });

  it('never writes a parameter, the driver message or its detail (they echo input)', () => {
    const err = failedInsert({ code: '22P02', detail: 'Token "x" is invalid.', table_name: 'runs' });
    const text = describeError(err);
    expect(text).not.toMatch(/argon2|someone@example|duplicate key|Token/);
    expect(stackFrames(err)).not.toMatch(/argon2|someone@example|params/);
    expect(stackFrames(err)).toMatch(/^\s+at /);
  });

  it('keeps other errors as they are, with codes, and stops after three levels', () => {
    expect(describeError(Object.assign(new Error('connect refused'), { code: 'ECONNREFUSED' }))).toBe(
      'Error: connect refused (ECONNREFUSED)',
    );
    let err: Error = new Error('0');
    for (let i = 1; i <= 5; i++) err = new Error(String(i), { cause: err });
    expect(describeError(err).split('caused by')).toHaveLength(4);
    expect(describeError('plain')).toBe('plain');
  });
});

describe('redactDatabaseErrorsInConsole', () => {
  it('prints a database error (wrapped as tRPC wraps it too) as describeError says it, and the rest as it is', () => {
    const printed: unknown[][] = [];
    const target = {
      error: (...a: unknown[]) => printed.push(a),
      warn: (...a: unknown[]) => printed.push(a),
      log: (...a: unknown[]) => printed.push(a),
    };
    redactDatabaseErrorsInConsole(target);
    const failed = failedInsert({ code: '23505', table_name: 'users' });
    const wrapped = Object.assign(new Error(failed.message), { code: 'INTERNAL_SERVER_ERROR', cause: failed });
    target.error('⨯', wrapped);
    target.warn(failed);
    const plain = new Error('not a database error');
    target.log('x', plain);
    expect(String(printed[0]![1])).toMatch(
      /^Error \(INTERNAL_SERVER_ERROR\); caused by Failed query: insert into "users".*; caused by database error 23505 \(table users\)/,
    );
    expect(JSON.stringify(printed.slice(0, 2))).not.toMatch(/argon2|someone@example/);
    expect(printed[2]).toEqual(['x', plain]);
  });
});
