import { describe, expect, it } from 'vitest';
import { describeError } from './log';

describe('describeError', () => {
  it('names what an error wraps, with codes: a failed query says why it failed', () => {
    const driver = Object.assign(new Error('duplicate key value violates unique constraint "x_pkey"'), { code: '23505' });
    const wrapped = new Error('Failed query: insert into x', { cause: driver });
    expect(describeError(wrapped)).toBe(
      'Error: Failed query: insert into x; caused by Error: duplicate key value violates unique constraint "x_pkey" (23505)',
    );
  });

  it('stops after three levels, and describes what is not an Error', () => {
    let err: Error = new Error('0');
    for (let i = 1; i <= 5; i++) err = new Error(String(i), { cause: err });
    expect(describeError(err).split('caused by')).toHaveLength(4);
    expect(describeError('plain')).toBe('plain');
  });
});
