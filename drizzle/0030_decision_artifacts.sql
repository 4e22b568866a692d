-- The artifacts a decision shows its approver. Decisions from before named none.
ALTER TABLE "decisions" ADD COLUMN "artifact_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL;