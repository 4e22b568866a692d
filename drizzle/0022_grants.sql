CREATE TABLE "decision_grants" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"decision_id" uuid NOT NULL,
	"action_digest" text NOT NULL,
	"target_id" uuid,
	"target_version" integer,
	"approver_id" text NOT NULL,
	"passkey" boolean DEFAULT false NOT NULL,
	"key_id" text NOT NULL,
	"issued_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"consumed_at" timestamp (3) with time zone,
	"consumed_by_type" text,
	"consumed_by_id" text,
	"voided_at" timestamp (3) with time zone,
	CONSTRAINT "decision_grants_decision_id_unique" UNIQUE("decision_id"),
	CONSTRAINT "decision_grants_target_check" CHECK (("decision_grants"."target_id" is null) = ("decision_grants"."target_version" is null))
);
--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "action" jsonb;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "action_digest" text;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "target_version" integer;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "editable" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "grant_ttl_seconds" integer;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "approved_action" jsonb;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "approved_action_digest" text;--> statement-breakpoint
ALTER TABLE "decision_grants" ADD CONSTRAINT "decision_grants_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decision_grants" ADD CONSTRAINT "decision_grants_decision_id_decisions_id_fk" FOREIGN KEY ("decision_id") REFERENCES "public"."decisions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_action_check" CHECK (("decisions"."action" is null) = ("decisions"."action_digest" is null) and ("decisions"."action" is null) = ("decisions"."grant_ttl_seconds" is null));