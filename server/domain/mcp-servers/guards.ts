/**
 * What a call of an upstream tool does (allow, ask, deny): the first of the server's guards whose
 * glob matches the tool's name says, else the server's default mode. The gateway asks this at every
 * call; the API shows each tool's answer beside it. The glob is the decision rules' own
 * (globMatch: `*` any run, `?` one character, anchored, everything else itself, never made into a
 * regular expression).
 */
import type { GuardMode, McpGuard } from '@/db/schema';
import { globMatch } from '../decisions/workspace-policy';

export interface GuardChoice {
  mode: GuardMode;
  /** The guard that matched; null when none did (the default mode). */
  guard: McpGuard | null;
  /** Its place in the server's guards; null for the default. */
  index: number | null;
}

export function guardFor(server: { guards: readonly McpGuard[]; defaultMode: GuardMode }, tool: string): GuardChoice {
  const index = server.guards.findIndex((g) => globMatch(g.tool, tool));
  if (index === -1) return { mode: server.defaultMode, guard: null, index: null };
  const guard = server.guards[index]!;
  return { mode: guard.mode, guard, index };
}
