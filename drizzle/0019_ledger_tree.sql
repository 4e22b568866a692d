CREATE TABLE "ledger_checkpoints" (
	"workspace_id" uuid NOT NULL,
	"tree_size" bigint NOT NULL,
	"root" "bytea" NOT NULL,
	"note" text NOT NULL,
	"key_id" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ledger_checkpoints_workspace_id_tree_size_pk" PRIMARY KEY("workspace_id","tree_size")
);
--> statement-breakpoint
CREATE TABLE "ledger_cosignatures" (
	"workspace_id" uuid NOT NULL,
	"tree_size" bigint NOT NULL,
	"witness" text NOT NULL,
	"key_id" text NOT NULL,
	"vkey" text NOT NULL,
	"line" text NOT NULL,
	"signed_at" timestamp (3) with time zone NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ledger_cosignatures_workspace_id_tree_size_witness_key_id_pk" PRIMARY KEY("workspace_id","tree_size","witness","key_id")
);
--> statement-breakpoint
CREATE TABLE "ledger_signing_keys" (
	"workspace_id" uuid NOT NULL,
	"key_id" text NOT NULL,
	"name" text NOT NULL,
	"public_key" "bytea" NOT NULL,
	"private_key_cipher" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp (3) with time zone,
	CONSTRAINT "ledger_signing_keys_workspace_id_key_id_pk" PRIMARY KEY("workspace_id","key_id")
);
--> statement-breakpoint
CREATE TABLE "ledger_tree_tiles" (
	"workspace_id" uuid NOT NULL,
	"level" smallint NOT NULL,
	"idx" bigint NOT NULL,
	"hashes" "bytea" NOT NULL,
	CONSTRAINT "ledger_tree_tiles_workspace_id_level_idx_pk" PRIMARY KEY("workspace_id","level","idx"),
	CONSTRAINT "ledger_tree_tiles_width_check" CHECK (length("ledger_tree_tiles"."hashes") between 32 and 8192 and length("ledger_tree_tiles"."hashes") % 32 = 0)
);
--> statement-breakpoint
CREATE TABLE "ledger_trees" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"size" bigint DEFAULT 0 NOT NULL,
	"root" "bytea" NOT NULL,
	"alarm" text,
	"alarm_at" timestamp (3) with time zone,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "ledger_checkpoints" ADD CONSTRAINT "ledger_checkpoints_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" ADD CONSTRAINT "ledger_cosignatures_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_signing_keys" ADD CONSTRAINT "ledger_signing_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_tree_tiles" ADD CONSTRAINT "ledger_tree_tiles_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_trees" ADD CONSTRAINT "ledger_trees_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "ledger_cosignatures_witness_idx" ON "ledger_cosignatures" USING btree ("workspace_id","witness");--> statement-breakpoint
CREATE UNIQUE INDEX "ledger_signing_keys_current_idx" ON "ledger_signing_keys" USING btree ("workspace_id") WHERE "ledger_signing_keys"."retired_at" is null;