-- How long a workspace keeps the stored bytes of artifacts: null, for ever, as before.
ALTER TABLE "workspaces" ADD COLUMN "artifact_content_days" integer;--> statement-breakpoint
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_artifact_content_days_check" CHECK ("workspaces"."artifact_content_days" between 1 and 3650);