-- Grant keys of their own, apart from the checkpoint keys: a tool server's JWKS and a witness's pinned
-- keys no longer share a key. Grants signed before this with a checkpoint key keep their tokens: that
-- key's row is copied here under its old id, retired now (or when it was retired), so the JWKS serves
-- it for one longest grant life more and the service can still show those tokens (docs/contract.md
-- §4.14). The next grant makes the workspace its own grant key.
CREATE TABLE "grant_signing_keys" (
	"workspace_id" uuid NOT NULL,
	"kid" text NOT NULL,
	"public_key" "bytea" NOT NULL,
	"private_key_cipher" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp (3) with time zone,
	CONSTRAINT "grant_signing_keys_workspace_id_kid_pk" PRIMARY KEY("workspace_id","kid")
);
--> statement-breakpoint
ALTER TABLE "grant_signing_keys" ADD CONSTRAINT "grant_signing_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "grant_signing_keys_current_idx" ON "grant_signing_keys" USING btree ("workspace_id") WHERE "grant_signing_keys"."retired_at" is null;--> statement-breakpoint
INSERT INTO "grant_signing_keys" ("workspace_id", "kid", "public_key", "private_key_cipher", "created_at", "retired_at")
SELECT k."workspace_id", k."key_id", k."public_key", k."private_key_cipher", k."created_at", coalesce(k."retired_at", now())
  FROM "ledger_signing_keys" k
 WHERE EXISTS (SELECT 1 FROM "decision_grants" g WHERE g."workspace_id" = k."workspace_id" AND g."key_id" = k."key_id");
