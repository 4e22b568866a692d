/**
 * npm run ledger:verify -- --workspace <name|id>
 *   Recomputes the workspace's hash chain from the database and names the first broken link.
 * npm run ledger:verify -- --bundle <bundle.json> [--previous <earlier-bundle.json>]
 *   Checks an exported bundle with no database (server/ledger/bundle.ts): its chain, its head, and
 *   that it extends the earlier export it names.
 * Exit status 0 when everything verifies, 2 when it does not.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { verifyBundle } from '@/server/ledger/bundle';
import { verifyWorkspace } from '@/server/ledger/verify';
import { fail, findWorkspace, withRuntime } from './cli';

const usage = 'Usage: npm run ledger:verify -- --workspace <name|id>, or -- --bundle <file> [--previous <file>]';
const { values } = parseArgs({
  options: { workspace: { type: 'string' }, bundle: { type: 'string' }, previous: { type: 'string' } },
  strict: true,
});
if (!values.workspace === !values.bundle) fail(usage);
if (values.previous && !values.bundle) fail(usage);

if (values.bundle) {
  const readJson = (file: string): unknown => {
    try {
      return JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      fail(`Cannot read ${file}: ${(err as Error).message}`);
    }
  };
  const report = verifyBundle(readJson(values.bundle), values.previous ? readJson(values.previous) : undefined);
  console.log(JSON.stringify(report, null, 2));
  if (report.ok) {
    const extended = report.extendsPrevious ? ', extending the earlier export' : '';
    console.log(`OK: ${report.checkedEvents} events verified, head ${report.lastSequence} ${report.lastHash}${extended}`);
  } else console.log(`BROKEN at sequence ${report.firstBreak!.sequence}: ${report.firstBreak!.reason}`);
  process.exit(report.ok ? 0 : 2);
}

await withRuntime(async ({ db }) => {
  const workspace = await findWorkspace(db, values.workspace!);
  const started = performance.now();
  const report = await verifyWorkspace(db, workspace.id);
  const seconds = (performance.now() - started) / 1000;
  console.log(
    JSON.stringify({ workspace: workspace.name, workspaceId: workspace.id, ...report, seconds: Number(seconds.toFixed(3)) }, null, 2),
  );
  if (report.ok) console.log(`OK: ${report.checkedEvents} events verified, head ${report.lastSequence} ${report.lastHash}`);
  else console.log(`BROKEN at sequence ${report.firstBreak!.sequence}: ${report.firstBreak!.reason}`);
  return report.ok ? 0 : 2;
});
