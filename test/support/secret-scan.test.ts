import { describe, expect, it } from 'vitest';
import { bodyStrings, bodyStringsIn, credentialsIn } from './secret-scan';

describe('credentialsIn (the log search of test/support/log-capture.ts)', () => {
  it('finds each form of credential the service issues, wherever it sits in a line', () => {
    const forms = [
      'awk_' + 'a'.repeat(43),
      'whsec_' + 'b'.repeat(32),
      'awi_' + 'c'.repeat(43),
      'aws_setup_' + 'd'.repeat(43),
      'Bearer abcdefghijkl',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig',
      '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2g',
    ];
    for (const secret of forms) {
      expect(credentialsIn({ msg: 'x', error: `failed with ${secret}` }), secret).toHaveLength(1);
      expect(credentialsIn({ msg: 'x', nested: [{ deep: secret }] }), secret).toHaveLength(1);
    }
  });

  it('finds any value under a credential’s name, and passes a line with ids and counts only', () => {
    for (const key of ['password', 'secret', 'token', 'cookie', 'authorization', 'apiKey', 'session_token']) {
      expect(credentialsIn({ msg: 'x', fields: { [key]: 'hunter2' } }), key).toHaveLength(1);
    }
    const accessLine = {
      time: '2026-11-26T00:00:00.000Z',
      level: 'info',
      msg: 'request',
      requestId: 'r',
      operation: 'POST /work',
      status: 201,
      ms: 3,
      bytes: 512,
      workspaceId: 'w',
      keyId: 'k',
    };
    expect(credentialsIn(accessLine)).toEqual([]);
  });
});

describe('bodyStrings and bodyStringsIn (request bodies in log lines)', () => {
  it('finds a body’s text in a line, as JSON writes it, and leaves ids, times and short values', () => {
    const sent = bodyStrings({
      title: 'Draft the "launch" plan',
      workspace_id: '0b0e3f7a-5c1d-4b8e-9f00-2a1b3c4d5e6f',
      due_at: '2026-11-26T10:00:00.000Z',
      priority: 'high',
      state: { notes: ['a checkpoint of some length'] },
    });
    expect([...sent].sort()).toEqual(['Draft the "launch" plan', 'a checkpoint of some length']);
    const line = JSON.stringify({ msg: 'unexpected error', error: 'Failed: params: Draft the "launch" plan' });
    expect(bodyStringsIn(line, sent)).toEqual(['Draft the "launch" plan']);
    expect(bodyStringsIn(JSON.stringify({ msg: 'request', workspaceId: '0b0e3f7a-5c1d-4b8e-9f00-2a1b3c4d5e6f' }), sent)).toEqual([]);
  });
});
