ALTER TABLE "milestones" ADD COLUMN "position" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "tasks" ADD COLUMN "position" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workstreams" ADD COLUMN "position" integer DEFAULT 0 NOT NULL;