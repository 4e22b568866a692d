/**
 * npm run ledger:verify -- --workspace <name|id>
 * Recomputes the workspace's hash chain from the database and names the first broken link.
 * Exit status 0 when the chain verifies, 2 when it does not.
 */
import { parseArgs } from 'node:util';
import { verifyWorkspace } from '@/server/ledger/verify';
import { fail, findWorkspace, withRuntime } from './cli';

const { values } = parseArgs({ options: { workspace: { type: 'string' } }, strict: true });
if (!values.workspace) fail('Usage: npm run ledger:verify -- --workspace <name|id>');

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
