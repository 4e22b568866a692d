// Runs a command-line tool (scripts/<name>.ts) as plain JavaScript: esbuild bundles the tool and
// our modules it imports (packages stay in node_modules) into node_modules/.cache/aws-tools, and
// node runs the bundle. A TypeScript loader registered in the process (tsx) costs ~35 MiB of
// memory and compiles every module as it loads; ledger:verify keeps to its memory budget
// (README, Performance) only without one. Building takes a few tens of milliseconds, every run,
// so a tool is never older than its sources.
//
// Usage: node scripts/tool.mjs <name> [arguments…]   (what the npm scripts run)
import { rename, readFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const [name, ...args] = process.argv.slice(2);
if (!name || !/^[a-z][a-z-]*$/.test(name)) {
  console.error('Usage: node scripts/tool.mjs <tool name> [arguments…]');
  process.exit(2);
}
const entry = path.join(root, 'scripts', `${name}.ts`);
const cache = path.join(root, 'node_modules', '.cache', 'aws-tools');
const out = path.join(cache, `${name}.mjs`);

// A bundle has one import.meta, the bundle's: each of our modules is given its own location back
// (verify-parallel.ts finds its worker's source by it, db/ its migrations).
const ownLocations = {
  name: 'own-import-meta',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const source = await readFile(args.path, 'utf8');
      const contents = source
        .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
        .replaceAll('import.meta.filename', JSON.stringify(args.path));
      return { contents, loader: 'ts' };
    });
  },
};

await mkdir(cache, { recursive: true });
// Written beside and renamed into place: two tools started at once never run a half-written file.
const partial = `${out}.${process.pid}`;
await build({
  entryPoints: [entry],
  outfile: partial,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  tsconfig: path.join(root, 'tsconfig.json'),
  plugins: [ownLocations],
  logLevel: 'error',
});
await rename(partial, out);
process.argv = [process.argv[0], entry, ...args];
await import(pathToFileURL(out).href);
