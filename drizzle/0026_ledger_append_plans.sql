-- ledger_append's statements are planned once per connection and kept (PL/pgSQL caches a generic
-- plan). Planned while a workspace's ledger was small, the version lookup was kept as a scan of
-- the ledger (sequential, or by the primary key) filtered by aggregate and sorted: every event of a
-- new aggregate (a claimed run) then read all the workspace's events, and claims ran at half rate.
-- The lookup is served in order by the aggregate's key, and nothing in the function
-- needs a sort or a sequential scan: with both ruled out while it runs, no plan it keeps can read
-- the ledger that way, whatever the statistics were when it was made.
ALTER FUNCTION ledger_append(uuid, jsonb) SET enable_sort = off;
--> statement-breakpoint
ALTER FUNCTION ledger_append(uuid, jsonb) SET enable_seqscan = off;
