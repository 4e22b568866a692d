CREATE TABLE "imported_receipts" (
	"workspace_id" uuid NOT NULL,
	"receipt_id" uuid NOT NULL,
	"document" jsonb NOT NULL,
	"document_digest" text NOT NULL,
	"imported_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "imported_receipts_workspace_id_receipt_id_pk" PRIMARY KEY("workspace_id","receipt_id")
);
--> statement-breakpoint
ALTER TABLE "imported_receipts" ADD CONSTRAINT "imported_receipts_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;