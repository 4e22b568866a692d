/**
 * The README and the guides in docs/, as the tests read them: which documents there are, in the order
 * a reader goes through them, which of their shell blocks run, and which are shown only.
 *
 * A reader runs the README's walk-through and then each guide's ```bash blocks in the same terminal,
 * so e2e/readme.spec.ts runs them so, in one bash session. A shell block that cannot run against the
 * test's service is fenced ```sh instead, and only where ILLUSTRATIONS allows it, with the reason:
 * everything else a guide tells a reader to type is checked against what really comes back.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '../..');

/** The guides, in the order the README's map lists them and the walk-through's terminal goes on through them. */
export const GUIDES = [
  'docs/agents.md',
  'docs/approvers.md',
  'docs/operators.md',
  'docs/verification.md',
  'docs/performance.md',
  'docs/contract.md',
  'docs/contributors.md',
] as const;

/**
 * The ```sh blocks each document may hold (shown, never run), and why no test can run them as written.
 * Keep them few: anything a reader types against the service belongs in a ```bash block.
 */
export const ILLUSTRATIONS: Record<string, { count: number; why: string }> = {
  'docs/operators.md': {
    count: 2,
    why:
      'the command-line tools are listed with their options and placeholders (test/cli runs every tool on both ' +
      'engines, e2e/npm-start-tools.spec.ts beside a running npm start), and `createdb` wants a PostgreSQL server of your own',
  },
  'docs/agents.md': {
    count: 1,
    why:
      'fronting an MCP server on your own machine takes a service started with MCP_UPSTREAM_ALLOW_HOSTS, which the ' +
      'walk-through’s npm start is not (test/cli/upstream-example.int.test.ts runs those steps with the example as a process)',
  },
  'docs/contributors.md': { count: 1, why: 'npm test and its parts run the test suite this spec belongs to' },
};

export function readDoc(file: string): string {
  return readFileSync(path.join(root, file), 'utf8');
}

export interface DocBlock {
  /** Where the block is written, for messages. */
  file: string;
  /** The block as written. */
  source: string;
  /** A human step the text places right after this block (`<!-- walk-through: … -->`). */
  humanAfter: string | null;
}

/** The README's "## Walk-through" section, up to the next "## " heading. */
export function walkThroughSection(readme: string): string {
  const start = readme.indexOf('\n## Walk-through\n');
  if (start < 0) throw new Error('the README has no "## Walk-through" section');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The ```bash blocks of `text`, in order, each with the human step written after it, if any. */
export function bashBlocks(file: string, text: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const fence = /^```bash\n([\s\S]*?)^```\n([\s\S]*?)(?=^```bash\n|(?![\s\S]))/gm;
  for (const [, source, after] of text.matchAll(fence)) {
    const human = /<!-- walk-through: (.+?) -->/.exec(after!);
    blocks.push({ file, source: source!, humanAfter: human ? human[1]! : null });
  }
  return blocks;
}

/** Every block a reader runs, in reading order: the README's walk-through, then each guide's. */
export function runnableBlocks(): DocBlock[] {
  return [
    ...bashBlocks('README.md', walkThroughSection(readDoc('README.md'))),
    ...GUIDES.flatMap((file) => bashBlocks(file, readDoc(file))),
  ];
}

/** The language of every fenced block of `text` (the word after ```, '' for none), outermost fences only. */
export function fences(text: string): { lang: string; body: string }[] {
  const found: { lang: string; body: string }[] = [];
  for (const [, , lang, body] of text.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```$/gm)) found.push({ lang: lang!, body: body! });
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a document's headings make (and any explicit `<a id>`). */
export function anchors(text: string): Set<string> {
  const withoutCode = text.replace(/^( *)```[\s\S]*?^\1```$/gm, '');
  const found = new Set<string>();
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} (.+)$/gm)) found.add(anchor(heading!.replace(/`/g, '')));
  for (const [, id] of withoutCode.matchAll(/<a id="([^"]+)">/g)) found.add(id!);
  return found;
}
