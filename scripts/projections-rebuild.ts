/**
 * npm run projections:rebuild [-- --workspace <name|id>]
 * Empties the projection tables (initiatives, workstreams, milestones, tasks, receipts, runs,
 * decisions, attention) of every workspace, or of one, and rebuilds them from the ledger alone.
 */
import { rebuildProjections } from '@/server/projections/rebuild';
import { findWorkspace, parseCli, withRuntime } from './cli';
import { plural } from '@/server/words';

const values = parseCli({
  command: 'projections:rebuild',
  summary: 'empties the projection tables and rebuilds them from the ledger alone.',
  usage: ['[--workspace <name|id>]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'only this workspace (default: every workspace)' },
  },
});

await withRuntime(async ({ db }) => {
  const workspaceId = values.workspace ? (await findWorkspace(db, values.workspace)).id : undefined;
  const started = performance.now();
  const reports = await rebuildProjections(db, workspaceId);
  for (const r of reports) console.log(JSON.stringify(r));
  console.log(`Rebuilt ${plural(reports.length, 'workspace')} in ${((performance.now() - started) / 1000).toFixed(2)} s.`);
  return 0;
});
