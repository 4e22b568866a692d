CREATE TABLE "runs" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"task_id" uuid NOT NULL,
	"agent_id" text,
	"status" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "runs_status_check" CHECK ("runs"."status" in ('queued', 'running', 'paused', 'completed', 'failed', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "decision_attention" (
	"decision_id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"attention_id" uuid NOT NULL,
	"requested_at" timestamp (3) with time zone NOT NULL,
	"last_requested_at" timestamp (3) with time zone NOT NULL,
	"request_count" integer NOT NULL,
	"recommended_option_id" text,
	"recommendation_note" text,
	"impact_if_delayed" text,
	"continuation_strategy" text,
	CONSTRAINT "decision_attention_attention_id_unique" UNIQUE("attention_id")
);
--> statement-breakpoint
CREATE TABLE "decisions" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"title" text NOT NULL,
	"description" text,
	"shape" text NOT NULL,
	"urgency" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"blocks_task" boolean DEFAULT false NOT NULL,
	"task_id" uuid,
	"run_id" uuid,
	"initiative_id" uuid,
	"workstream_id" uuid,
	"options" jsonb NOT NULL,
	"due_at" timestamp (3) with time zone,
	"on_timeout" text DEFAULT 'expire' NOT NULL,
	"resolution" jsonb,
	"created_by_type" text NOT NULL,
	"created_by_id" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "decisions_status_check" CHECK ("decisions"."status" in ('pending', 'approved', 'declined', 'cancelled', 'expired')),
	CONSTRAINT "decisions_resolution_check" CHECK (("decisions"."status" = 'pending') = ("decisions"."resolution" is null))
);
--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decision_attention" ADD CONSTRAINT "decision_attention_decision_id_decisions_id_fk" FOREIGN KEY ("decision_id") REFERENCES "public"."decisions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decision_attention" ADD CONSTRAINT "decision_attention_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_task_id_tasks_id_fk" FOREIGN KEY ("task_id") REFERENCES "public"."tasks"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_initiative_id_initiatives_id_fk" FOREIGN KEY ("initiative_id") REFERENCES "public"."initiatives"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_workstream_id_workstreams_id_fk" FOREIGN KEY ("workstream_id") REFERENCES "public"."workstreams"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "runs_task_idx" ON "runs" USING btree ("task_id");--> statement-breakpoint
CREATE INDEX "runs_workspace_idx" ON "runs" USING btree ("workspace_id");--> statement-breakpoint
CREATE INDEX "decisions_workspace_created_idx" ON "decisions" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "decisions_pending_due_idx" ON "decisions" USING btree ("due_at") WHERE "decisions"."status" = 'pending' and "decisions"."due_at" is not null;