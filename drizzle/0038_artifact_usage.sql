-- The bytes each workspace holds in artifact_contents, kept as a counter beside them: the artifact
-- quota is checked against this row (and its lock orders concurrent registrations) instead of
-- summing every stored content at each registration.
CREATE TABLE "artifact_usage" (
	"workspace_id" uuid PRIMARY KEY NOT NULL,
	"stored_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "artifact_usage_stored_bytes_check" CHECK ("artifact_usage"."stored_bytes" >= 0)
);
--> statement-breakpoint
ALTER TABLE "artifact_usage" ADD CONSTRAINT "artifact_usage_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- What is stored already counts from the start.
INSERT INTO "artifact_usage" ("workspace_id", "stored_bytes")
  SELECT "workspace_id", sum(octet_length("content")) FROM "artifact_contents" GROUP BY "workspace_id";
