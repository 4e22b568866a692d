-- ledger_append with its reads and writes done once per call, not once per event. It
-- ran two statements per event (the aggregate's last version, then the insert), each with its own
-- executor start and index descents, inside the workspace's lock: a batch of 32 claims (64 events)
-- held the lock for 128 statements. Now: one read of the last versions of every aggregate the call
-- names, a loop that only computes (versions, the chain of hashes), one insert of every event, and
-- the answer from the same arrays. What is hashed and stored is as 0025_ledger_append_version_lookup.sql.
--
-- The SET clauses are 0026_ledger_append_plans.sql's (CREATE OR REPLACE would drop them): no plan
-- the function keeps may read the ledger by sequential scan or sort, whatever the statistics were
-- when it was made.
CREATE OR REPLACE FUNCTION ledger_append(p_workspace_id uuid, p_events jsonb)
RETURNS TABLE (r_id uuid, r_sequence bigint, r_aggregate_version integer, r_previous_hash text, r_event_hash text)
LANGUAGE plpgsql
SET enable_sort = off
SET enable_seqscan = off
AS $$
DECLARE
  v_seq bigint;
  v_prev text;
  v_event jsonb;
  v_aggregate text;
  v_versions jsonb;
  v_version integer;
  v_hash text;
  a_events jsonb[] := '{}';
  a_seq bigint[] := '{}';
  a_version integer[] := '{}';
  a_prev text[] := '{}';
  a_hash text[] := '{}';
BEGIN
  -- The head-row lock serialises appends of one workspace: sequence order is commit order,
  -- and a rollback releases the lock without consuming a sequence number.
  SELECT h.sequence, h.head_hash INTO v_seq, v_prev
    FROM ledger_heads h WHERE h.workspace_id = p_workspace_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no ledger head for workspace %', p_workspace_id USING ERRCODE = 'no_data_found';
  END IF;

  -- Each aggregate's last version, read off the (workspace, aggregate, version) key backwards:
  -- ordered by that key and limited to one row, so that no other index can serve it (0025).
  SELECT coalesce(jsonb_object_agg(a.id, coalesce(v.version, 0)), '{}'::jsonb) INTO v_versions
    FROM (SELECT DISTINCT value->>'aggregateId' AS id FROM jsonb_array_elements(p_events)) a
    LEFT JOIN LATERAL (
      SELECT e.aggregate_version AS version FROM ledger_events e
       WHERE e.workspace_id = p_workspace_id AND e.aggregate_id = a.id::uuid
       ORDER BY e.workspace_id DESC, e.aggregate_id DESC, e.aggregate_version DESC
       LIMIT 1) v ON true;

  FOR v_event IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    v_seq := v_seq + 1;
    v_aggregate := v_event->>'aggregateId';
    v_version := (v_versions->>v_aggregate)::integer + 1;
    v_versions := jsonb_set(v_versions, ARRAY[v_aggregate], to_jsonb(v_version));
    v_hash := 'sha256:' || encode(sha256(convert_to(
        (v_event->'canonical'->>0) || v_version::text
        || (v_event->'canonical'->>1) || (v_event->>'payloadText')
        || (v_event->'canonical'->>2) || v_prev
        || (v_event->'canonical'->>3) || v_seq::text
        || (v_event->'canonical'->>4), 'UTF8')), 'hex');
    a_events := array_append(a_events, v_event);
    a_seq := array_append(a_seq, v_seq);
    a_version := array_append(a_version, v_version);
    a_prev := array_append(a_prev, v_prev);
    a_hash := array_append(a_hash, v_hash);
    v_prev := v_hash;
  END LOOP;

  INSERT INTO ledger_events (
    workspace_id, sequence, id, owner_id, aggregate_type, aggregate_id, aggregate_version,
    event_type, schema_version, actor_type, actor_id, payload_text, payload_digest, occurred_at,
    idempotency_key, causation_id, correlation_id, context_manifest_digest, previous_hash, event_hash
  )
  SELECT
    p_workspace_id, u.seq, (u.ev->>'id')::uuid, (u.ev->>'ownerId')::uuid,
    u.ev->>'aggregateType', (u.ev->>'aggregateId')::uuid, u.version,
    u.ev->>'eventType', (u.ev->>'schemaVersion')::integer, u.ev->>'actorType', u.ev->>'actorId',
    u.ev->>'payloadText', u.ev->>'payloadDigest', u.ev->>'occurredAtCanonical',
    u.ev->>'idempotencyKey', (u.ev->>'causationId')::uuid, (u.ev->>'correlationId')::uuid,
    u.ev->>'contextManifestDigest', u.prev, u.hash
  FROM unnest(a_events, a_seq, a_version, a_prev, a_hash) AS u(ev, seq, version, prev, hash);

  UPDATE ledger_heads SET sequence = v_seq, head_hash = v_prev, updated_at = now()
    WHERE workspace_id = p_workspace_id;

  RETURN QUERY
    SELECT (u.ev->>'id')::uuid, u.seq, u.version, u.prev, u.hash
      FROM unnest(a_events, a_seq, a_version, a_prev, a_hash) AS u(ev, seq, version, prev, hash);
END
$$;
