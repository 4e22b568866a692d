/**
 * Whom a grant is for: its token's `azp` (the authorized party, as OpenID Connect names it). A
 * grant belongs to whoever raised its decision, and only they are shown its token and may use it:
 *
 * - raised by an API key (REST or MCP): that key's id. Only that key sees the token, and only that
 *   key's presentation uses it. A tool server pins `azp` to the id of the key it consumes with
 *   (`GET /workspace` `data.api_key.id`).
 * - raised by a person (POST /decisions with a session): `user:<their id>`. They see the token;
 *   keys act for their owner, so a key they own uses it (POST /grants/consume takes a key).
 * - raised by the service itself: null, for no one (no decision the service raises has an action).
 *
 * Everyone else reading the decision sees the grant's id, digest, expiry and state, never its token;
 * any other key presenting it gets 403 grant_not_yours and uses nothing up.
 */
import type { decisions } from '@/db/schema';
import type { Actor } from '../actor';

type Raiser = Pick<typeof decisions.$inferSelect, 'createdByType' | 'createdById'>;

/** The `azp` of a grant issued for a decision `d` raised. */
export function azpOfRaiser(d: Raiser): string | null {
  if (d.createdByType === 'api_key') return d.createdById;
  if (d.createdByType === 'human') return `user:${d.createdById}`;
  return null;
}

/** Whether `viewer` is the party a grant is for, and so may be shown its token. */
export function isGrantHolder(azp: string | null, viewer: Pick<Actor, 'type' | 'id'>): boolean {
  return azp !== null && azp === azpOfRaiser({ createdByType: viewer.type, createdById: viewer.id });
}

/** Whether the key `actor` may use a grant for `azp`: it is that key, or a key of the person it is for. */
export function mayUseGrant(azp: string | null, actor: Pick<Actor, 'type' | 'id' | 'ownerId'>): boolean {
  if (azp === null || actor.type !== 'api_key') return false;
  return azp === actor.id || azp === `user:${actor.ownerId}`;
}
