/**
 * Which guard a call of an upstream tool meets: the server's guards in order, the first whose glob
 * matches the tool's name, else the server's default mode. A glob is `*` for any run of
 * characters and `?` for one, matched against the whole name; nothing else in it is special.
 */
import type { GuardMode, McpGuard } from '@/db/schema';

export interface GuardMatch {
  mode: GuardMode;
  /** The guard that matched, and its place in the list; null when none did (the default mode). */
  guard: McpGuard | null;
  index: number | null;
}

/** Whether `glob` matches the whole of `name`. */
function globMatches(glob: string, name: string): boolean {
  const pattern = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*').replaceAll('?', '.');
  return new RegExp(`^${pattern}$`, 's').test(name);
}

export function guardFor(server: { guards: readonly McpGuard[]; defaultMode: GuardMode }, tool: string): GuardMatch {
  const index = server.guards.findIndex((g) => globMatches(g.tool, tool));
  if (index < 0) return { mode: server.defaultMode, guard: null, index: null };
  return { mode: server.guards[index]!.mode, guard: server.guards[index]!, index };
}
