/**
 * A vitest reporter that prints the slowest test files when a run ends (wall time of each file:
 * its imports, setup and tests), so CI shows where the suite's time goes without a second run.
 */
import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

const SHOWN = 15;

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules.map((m) => {
      const d = m.diagnostic();
      const ms = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
      return { ms, name: `${path.relative(process.cwd(), m.moduleId)} [${m.project.name}]` };
    });
    if (rows.length === 0) return;
    rows.sort((a, b) => b.ms - a.ms);
    const total = rows.reduce((sum, r) => sum + r.ms, 0);
    const lines = rows.slice(0, SHOWN).map((r) => `${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.name}`);
    process.stdout.write(
      `\nThe ${Math.min(SHOWN, rows.length)} slowest of ${rows.length} test files (${(total / 1000).toFixed(0)} s of file time in all):\n${lines.join('\n')}\n`,
    );
  }
}
