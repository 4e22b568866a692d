-- Decision policies: a workspace's rules, and each decision's frozen policy, its source and the
-- rulings towards its quorum. Decisions from before keep policy null: the default (one approval, veto).
ALTER TABLE "workspaces" ADD COLUMN "decision_rules" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "workspaces" ADD COLUMN "decision_rules_version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "policy" jsonb;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "policy_digest" text;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "policy_source" jsonb;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "approvals" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "declines" jsonb DEFAULT '[]'::jsonb NOT NULL;