-- UNLOGGED: counters are bumped on every request and need no WAL or disk flush (see db/schema/rate-limits.ts).
CREATE UNLOGGED TABLE "rate_limit_counters" (
	"bucket" text NOT NULL,
	"window_start" timestamp (3) with time zone NOT NULL,
	"hits" integer NOT NULL,
	CONSTRAINT "rate_limit_counters_bucket_window_start_pk" PRIMARY KEY("bucket","window_start")
);
