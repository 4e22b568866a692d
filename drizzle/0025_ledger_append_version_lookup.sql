-- ledger_append finds an aggregate's last version by the aggregate's key, whatever the planner's
-- statistics say (a fresh workspace's appends read all of its events). Otherwise as
-- 0021_payload_text.sql.
CREATE OR REPLACE FUNCTION ledger_append(p_workspace_id uuid, p_events jsonb)
RETURNS TABLE (r_id uuid, r_sequence bigint, r_aggregate_version integer, r_previous_hash text, r_event_hash text)
LANGUAGE plpgsql AS $$
DECLARE
  v_seq bigint;
  v_prev text;
  v_event jsonb;
  v_version integer;
  v_hash text;
  v_payload text;
BEGIN
  -- The head-row lock serialises appends of one workspace: sequence order is commit order,
  -- and a rollback releases the lock without consuming a sequence number.
  SELECT h.sequence, h.head_hash INTO v_seq, v_prev
    FROM ledger_heads h WHERE h.workspace_id = p_workspace_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no ledger head for workspace %', p_workspace_id USING ERRCODE = 'no_data_found';
  END IF;

  FOR v_event IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    v_seq := v_seq + 1;
    -- The aggregate's last version, read off the (workspace, aggregate, version) key backwards.
    -- Ordered by that key and limited to one row, so that no other index can serve it: as
    -- max() alone, on a young table without statistics, the planner read the workspace's
    -- events by ledger_events_type_idx and filtered them, one more row per event appended.
    SELECT coalesce((
      SELECT e.aggregate_version FROM ledger_events e
       WHERE e.workspace_id = p_workspace_id AND e.aggregate_id = (v_event->>'aggregateId')::uuid
       ORDER BY e.workspace_id DESC, e.aggregate_id DESC, e.aggregate_version DESC
       LIMIT 1), 0) + 1 INTO v_version;
    v_payload := v_event->>'payloadText';
    v_hash := 'sha256:' || encode(sha256(convert_to(
        (v_event->'canonical'->>0) || v_version::text
        || (v_event->'canonical'->>1) || v_payload
        || (v_event->'canonical'->>2) || v_prev
        || (v_event->'canonical'->>3) || v_seq::text
        || (v_event->'canonical'->>4), 'UTF8')), 'hex');

    INSERT INTO ledger_events (
      workspace_id, sequence, id, owner_id, aggregate_type, aggregate_id, aggregate_version,
      event_type, schema_version, actor_type, actor_id, payload_text, payload_digest, occurred_at,
      idempotency_key, causation_id, correlation_id, context_manifest_digest, previous_hash, event_hash
    ) VALUES (
      p_workspace_id, v_seq, (v_event->>'id')::uuid, (v_event->>'ownerId')::uuid,
      v_event->>'aggregateType', (v_event->>'aggregateId')::uuid, v_version,
      v_event->>'eventType', (v_event->>'schemaVersion')::integer, v_event->>'actorType', v_event->>'actorId',
      v_payload, v_event->>'payloadDigest', v_event->>'occurredAtCanonical',
      v_event->>'idempotencyKey', (v_event->>'causationId')::uuid, (v_event->>'correlationId')::uuid,
      v_event->>'contextManifestDigest', v_prev, v_hash
    );

    r_id := (v_event->>'id')::uuid;
    r_sequence := v_seq;
    r_aggregate_version := v_version;
    r_previous_hash := v_prev;
    r_event_hash := v_hash;
    RETURN NEXT;
    v_prev := v_hash;
  END LOOP;

  UPDATE ledger_heads SET sequence = v_seq, head_hash = v_prev, updated_at = now()
    WHERE workspace_id = p_workspace_id;
END
$$;
