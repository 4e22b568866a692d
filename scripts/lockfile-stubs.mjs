// npm run lock:stubs — run after `npm install` changes package-lock.json.
// The registry mirror this project is built against lacks some other platforms' optional
// binaries (e.g. @next/swc-darwin-arm64), so npm leaves them out of the lockfile and `npm ci` then
// refuses the lockfile as out of sync. This adds an entry for each missing platform package, with
// the os/cpu its name states, so every platform's `npm ci` agrees and skips what it cannot use.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
const OS = ['darwin', 'win32', 'linux', 'freebsd', 'android'];
const CPU = ['arm64', 'x64', 'ia32', 'arm'];
let added = 0;

for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const where = `${path ? `${path}/` : ''}node_modules/${name}`;
    if (packages[where] || packages[`node_modules/${name}`]) continue;
    const parts = name.split(/[/-]/);
    const os = OS.find((o) => parts.includes(o));
    const cpu = CPU.find((c) => parts.includes(c));
    if (!os || !cpu || !/^\d+\.\d+\.\d+$/.test(version)) continue;
    packages[`node_modules/${name}`] = { version, cpu: [cpu], optional: true, os: [os] };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lockfile: ${added} missing platform package entr${added === 1 ? 'y' : 'ies'} added`);
