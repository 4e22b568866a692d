// Runs a command-line tool (scripts/<name>.ts) as plain JavaScript: scripts/bundle.mjs bundles the
// tool and our modules it imports, and node runs the bundle. ledger:verify keeps to its memory
// budget (docs/performance.md) only without a TypeScript loader in the process. A tool is bundled
// on every run, so it is never older than its sources.
//
// Usage: node scripts/tool.mjs <name> [arguments…]   (what the npm scripts run; no `--` needed,
// and nothing printed but the tool's own output, so an MCP client can start
// `node scripts/tool.mjs mcp --url …` as it is)
import path from 'node:path';
import { bundle } from './bundle.mjs';

const root = path.resolve(import.meta.dirname, '..');
const [name, ...args] = process.argv.slice(2);
if (!name || !/^[a-z][a-z-]*$/.test(name)) {
  console.error('Usage: node scripts/tool.mjs <tool name> [arguments…]');
  process.exit(2);
}
const entry = path.join(root, 'scripts', `${name}.ts`);
const url = await bundle(path.join('scripts', `${name}.ts`), name);
process.argv = [process.argv[0], entry, ...args];
try {
  // A tool that opens the database is declared (scripts/db-tool.ts) and run here; the others run as they load.
  const tool = (await import(url)).default;
  if (typeof tool?.main === 'function') await tool.main(name);
} catch (err) {
  // scripts/cli.ts ToolExit: the tool's message and status, never a stack trace.
  if (err?.name !== 'ToolExit') throw err;
  if (err.message) console.error(err.message);
  process.exit(err.exitCode);
}
