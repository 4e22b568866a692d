-- Decision policies, the rest: how far each decision's escalation has gone and when its next step is
-- due (a partial index for the job), and a member's delegation while away.
ALTER TABLE "memberships" ADD COLUMN "away_until" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "memberships" ADD COLUMN "delegate_id" uuid;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "escalated_steps" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "next_escalation_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_delegate_id_users_id_fk" FOREIGN KEY ("delegate_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "decisions_escalation_due_idx" ON "decisions" USING btree ("next_escalation_at") WHERE "decisions"."status" = 'pending' and "decisions"."next_escalation_at" is not null;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_delegation_check" CHECK (("memberships"."away_until" is null) = ("memberships"."delegate_id" is null) and "memberships"."delegate_id" <> "memberships"."user_id");