CREATE TABLE "dedup_claims" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"fingerprint_hash" text NOT NULL,
	"source" text NOT NULL,
	"event_key" text NOT NULL,
	"initiative_id" uuid,
	"active_run_id" uuid NOT NULL,
	"claimed_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"released_at" timestamp (3) with time zone,
	"version" integer DEFAULT 1 NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_checkpoints" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"run_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"label" text NOT NULL,
	"state" jsonb,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "initiatives" ADD COLUMN "pause_id" uuid;--> statement-breakpoint
ALTER TABLE "initiatives" ADD COLUMN "resume_status" text;--> statement-breakpoint
ALTER TABLE "milestones" ADD COLUMN "pause_id" uuid;--> statement-breakpoint
ALTER TABLE "milestones" ADD COLUMN "resume_status" text;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "pause_id" uuid;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "resume_status" text;--> statement-breakpoint
ALTER TABLE "workstreams" ADD COLUMN "pause_id" uuid;--> statement-breakpoint
ALTER TABLE "workstreams" ADD COLUMN "resume_status" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "pause_id" uuid;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "resume_status" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "checkpoint_id" uuid;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "summary" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "finished_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "dedup_claims" ADD CONSTRAINT "dedup_claims_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_checkpoints" ADD CONSTRAINT "run_checkpoints_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_checkpoints" ADD CONSTRAINT "run_checkpoints_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "dedup_claims_fingerprint_idx" ON "dedup_claims" USING btree ("workspace_id","fingerprint_hash");--> statement-breakpoint
CREATE UNIQUE INDEX "run_checkpoints_run_position_idx" ON "run_checkpoints" USING btree ("run_id","position");