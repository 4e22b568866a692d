-- Removing an artifact's stored bytes: when they went, and when bytes were last registered
-- (the workspace's retention counts from there). The digest stays, in the table and the ledger.
ALTER TABLE "artifact_contents" ADD COLUMN "last_registered_at" timestamp (3) with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "artifacts" ADD COLUMN "content_removed_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE INDEX "artifact_contents_registered_idx" ON "artifact_contents" USING btree ("last_registered_at");