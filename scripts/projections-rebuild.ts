/**
 * npm run projections:rebuild [-- --workspace <name|id>]
 * Empties the projection tables (initiatives, workstreams, milestones, tasks, receipts, runs,
 * decisions, attention) of every workspace, or of one, and rebuilds them from the ledger alone;
 * the ledger's Merkle tree too, which clears its alarm. The running service's integrator then
 * signs a checkpoint of the rebuilt tree.
 */
import { rebuildProjections } from '@/server/projections/rebuild';
import { plural } from '@/server/words';
import { findWorkspace } from './cli';
import { dbTool } from './db-tool';

const cli = {
  command: 'projections:rebuild',
  summary: 'empties the projection tables and rebuilds them, and the ledger’s Merkle tree, from the ledger alone.',
  usage: ['[--workspace <name|id>]'],
  options: {
    workspace: { type: 'string', value: '<name|id>', description: 'only this workspace (default: every workspace)' },
  },
} as const;

export default dbTool({
  spec: cli,
  async run({ db }, values, io) {
    const workspaceId = values.workspace ? (await findWorkspace(db, values.workspace)).id : undefined;
    const started = performance.now();
    const reports = await rebuildProjections(db, workspaceId);
    for (const r of reports) {
      io.log(JSON.stringify(r));
      const { tree } = r;
      const alarm = tree.clearedAlarm ? `; its alarm is cleared (it said: ${tree.clearedAlarm})` : '';
      io.log(
        `Workspace ${r.workspaceId}: the Merkle tree is rebuilt from ${plural(tree.size, 'event')} (it held ${tree.previousSize})${alarm}. ` +
          `Root ${tree.root}: the service signs it at its next checkpoint.`,
      );
    }
    io.log(`Rebuilt ${plural(reports.length, 'workspace')} in ${((performance.now() - started) / 1000).toFixed(2)} s.`);
    return 0;
  },
});
