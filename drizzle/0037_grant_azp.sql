-- Whom each grant is for (its token's `azp`): only that party is shown the token and may use it.
-- Grants issued before this are given the party that raised their decision, as a replay of their
-- `grant.issued` events gives it (server/domain/grants/events.ts): a key's id, `user:<id>` for a
-- person, null for the system. Their tokens now carry the claim: a copy taken before the upgrade
-- no longer matches and is read again from the decision.
ALTER TABLE "decision_grants" ADD COLUMN "azp" text;--> statement-breakpoint
UPDATE "decision_grants" g
   SET "azp" = CASE d."created_by_type" WHEN 'api_key' THEN d."created_by_id" WHEN 'human' THEN 'user:' || d."created_by_id" END
  FROM "decisions" d
 WHERE d."id" = g."decision_id";
