/**
 * The README fits on a screen and leads to one guide per reader; the guides keep their links, name no
 * tracker numbers, put no key on a command line, and show as illustration only the shell blocks
 * test/support/docs.ts allows (everything else they tell a reader to type runs in e2e/readme.spec.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GUIDES, ILLUSTRATIONS, anchor, anchors, bashBlocks, fences, readDoc, root, runnableBlocks, walkThroughSection } from './docs';

const documents = ['README.md', ...GUIDES];

describe('the README', () => {
  const readme = readDoc('README.md');

  it('is at most 300 lines, with both commands (run and test) on its first screen', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const firstScreen = readme.split('\n').slice(0, 24).join('\n');
    const first = fences(firstScreen)[0];
    expect(first?.lang).toBe('bash');
    expect(first?.body).toMatch(/^npm ci && npm start\b/m);
    expect(first?.body).toMatch(/^npm test\b/m);
  });

  it('links every guide in docs/, and every guide is one the tests read', () => {
    const onDisk = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));
    expect(onDisk.map((f) => `docs/${f}`).sort()).toEqual([...GUIDES].sort());
    for (const guide of GUIDES) expect(readme, guide).toContain(`](${guide})`);
  });

  it('tours the whole loop in its walk-through: work, a decision, a human approval, the grant used, the ledger verified', () => {
    const blocks = bashBlocks('README.md', walkThroughSection(readme));
    const all = blocks.map((b) => b.source).join('\n');
    expect(all).toContain('-X POST $BASE/work');
    expect(all).toContain('-X POST $BASE/decisions ');
    expect(blocks.some((b) => b.humanAfter !== null && /approves \$\w+/.test(b.humanAfter))).toBe(true);
    expect(all).toContain('$BASE/grants/consume');
    expect(all).toContain('$BASE/ledger/verify');
    // In that order.
    const at = ['$BASE/work', '$BASE/decisions', '$BASE/grants/consume', '$BASE/ledger/verify'].map((s) => all.indexOf(s));
    expect([...at].sort((a, b) => a - b)).toEqual(at);
  });
});

describe('the guides', () => {
  it('name no tracker numbers', () => {
    for (const file of documents) expect(readDoc(file), file).not.toMatch(/\b(issues?|ticket|tracker) #?\d+/i);
  });

  it('put no key on a command line: keys come from AWS_API_KEY or --key-file', () => {
    for (const file of documents) {
      for (const { lang, body } of fences(readDoc(file))) {
        if (!['bash', 'sh'].includes(lang)) continue;
        expect(body, file).not.toMatch(/--key[ =]/);
        // The one key a reader pastes is the walk-through's shell variable, never an argument.
        for (const line of body.split('\n').filter((l) => /awk_/.test(l.replace(/#.*$/, '')))) {
          expect(line, file).toMatch(/^export BASE=\S+ KEY=awk_… /);
        }
      }
    }
  });

  it('fence shell only as bash (run) or sh (shown, for the reasons test/support/docs.ts gives)', () => {
    for (const file of documents) {
      const langs = fences(readDoc(file)).map((f) => f.lang);
      expect(
        langs.filter((l) => ['shell', 'console', 'zsh', 'shellscript'].includes(l)),
        file,
      ).toEqual([]);
      expect(langs.filter((l) => l === 'sh').length, file).toBe(ILLUSTRATIONS[file]?.count ?? 0);
    }
  });

  it('hold runnable blocks in the README and in every guide a reader types into', () => {
    const files = runnableBlocks().map((b) => b.file);
    for (const file of ['README.md', 'docs/agents.md', 'docs/approvers.md', 'docs/operators.md', 'docs/verification.md']) {
      expect(files, file).toContain(file);
    }
  });

  it('link only to files that exist and headings that do', () => {
    const problems: string[] = [];
    for (const file of documents) {
      const text = readDoc(file).replace(/^( *)```[\s\S]*?^\1```$/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const [where, hash] = target!.split('#');
        const resolved = where ? path.join(path.dirname(file), where) : file;
        if (!existsSync(path.join(root, resolved))) problems.push(`${file}: ${target} (no such file)`);
        else if (hash && resolved.endsWith('.md') && !anchors(readDoc(resolved)).has(hash))
          problems.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('make anchors as GitHub does', () => {
    expect(anchor("An agent's loop: claim ready work, keep its lease")).toBe('an-agents-loop-claim-ready-work-keep-its-lease');
    expect(anchor('Production: backups and restore (the runbook)')).toBe('production-backups-and-restore-the-runbook');
  });
});
