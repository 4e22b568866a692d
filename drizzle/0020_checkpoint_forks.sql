-- A checkpoint is known by its size and its root: a tree rebuilt from changed events is signed again at a size already signed (a fork a witness catches), and both notes are kept. Cosignatures name the root they vouch for.
ALTER TABLE "ledger_cosignatures" ADD COLUMN "root" "bytea";--> statement-breakpoint
UPDATE "ledger_cosignatures" c SET "root" = k."root" FROM "ledger_checkpoints" k WHERE k."workspace_id" = c."workspace_id" AND k."tree_size" = c."tree_size";--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" ALTER COLUMN "root" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "ledger_checkpoints" DROP CONSTRAINT "ledger_checkpoints_workspace_id_tree_size_pk";--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" DROP CONSTRAINT "ledger_cosignatures_workspace_id_tree_size_witness_key_id_pk";--> statement-breakpoint
ALTER TABLE "ledger_checkpoints" ADD CONSTRAINT "ledger_checkpoints_workspace_id_tree_size_root_pk" PRIMARY KEY("workspace_id","tree_size","root");--> statement-breakpoint
ALTER TABLE "ledger_cosignatures" ADD CONSTRAINT "ledger_cosignatures_workspace_id_tree_size_root_witness_key_id_pk" PRIMARY KEY("workspace_id","tree_size","root","witness","key_id");
