-- What a run delivered: the artifacts its agent named when it finished. Runs from before named none.
ALTER TABLE "runs" ADD COLUMN "artifact_ids" uuid[] DEFAULT '{}'::uuid[] NOT NULL;