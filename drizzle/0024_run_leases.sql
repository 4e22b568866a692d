-- Leases and fencing of runs. Runs that exist already get their fence from their
-- order among their task's runs (what replaying their events gives), and hold no lease until
-- their next checkpoint or resume: an agent written before leases is never failed for not
-- heartbeating a run it started then.
ALTER TABLE "runs" ADD COLUMN "fence" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
UPDATE "runs" AS r SET "fence" = o.n
  FROM (SELECT "id", row_number() OVER (PARTITION BY "task_id" ORDER BY "created_at", "id") AS n FROM "runs") AS o
 WHERE o."id" = r."id";--> statement-breakpoint
ALTER TABLE "runs" ALTER COLUMN "fence" DROP DEFAULT;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "lease_seconds" integer DEFAULT 300 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "lease_expires_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "failure_reason" text;--> statement-breakpoint
DROP INDEX "runs_task_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "runs_task_fence_idx" ON "runs" USING btree ("task_id","fence");--> statement-breakpoint
CREATE INDEX "runs_lease_idx" ON "runs" USING btree ("lease_expires_at") WHERE "runs"."lease_expires_at" is not null;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_lease_seconds_check" CHECK ("runs"."lease_seconds" between 5 and 3600);--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_failure_reason_check" CHECK ("runs"."failure_reason" is null or "runs"."failure_reason" = 'lease_expired');
