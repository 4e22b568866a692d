-- Witnesses named by the workspace's owners: only their cosignatures are kept and served. A
-- cosignature is now one per witness key and tree size (the newest it sent), so of the lines kept
-- before for one witness and size (other roots at that size) only the newest stays. Lines already
-- kept by witnesses nobody has named yet stay in the table, served again once an owner names them.
CREATE TABLE "ledger_witnesses" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"name" text NOT NULL,
	"key_id" text NOT NULL,
	"vkey" text NOT NULL
);
--> statement-breakpoint
DELETE FROM "ledger_cosignatures" c
 USING "ledger_cosignatures" newer
 WHERE newer."workspace_id" = c."workspace_id" AND newer."tree_size" = c."tree_size"
   AND newer."witness" = c."witness" AND newer."key_id" = c."key_id"
   AND (newer."received_at", newer."root") > (c."received_at", c."root");--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" DROP CONSTRAINT "ledger_cosignatures_workspace_id_tree_size_root_witness_key_id_pk";--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" ADD CONSTRAINT "ledger_cosignatures_workspace_id_tree_size_witness_key_id_pk" PRIMARY KEY("workspace_id","tree_size","witness","key_id");--> statement-breakpoint
ALTER TABLE "ledger_witnesses" ADD CONSTRAINT "ledger_witnesses_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_witnesses_key_idx" ON "ledger_witnesses" USING btree ("workspace_id","name","key_id");--> statement-breakpoint
CREATE INDEX "ledger_witnesses_vkey_idx" ON "ledger_witnesses" USING btree ("workspace_id","vkey");