-- Filling in a response written before the append it reports on (server/ledger/append.ts,
-- appendEventsAtCommit; server/api/mutation.ts). A write's stored idempotency response names the
-- sequence, aggregate version and hashes that ledger_append assigns under the workspace's lock. It
-- is written with random stand-ins for them and goes to the database with the append and COMMIT in
-- one flight; this swaps each stand-in for its value, so the lock is held for no round trip to
-- the application. Stand-ins are unguessable, so a request's own text cannot contain one.
CREATE FUNCTION fill_stand_ins(p_template text, p_stand_ins text[], p_values text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  v_out text := p_template;
BEGIN
  IF coalesce(array_length(p_stand_ins, 1), 0) <> coalesce(array_length(p_values, 1), 0) THEN
    RAISE EXCEPTION 'fill_stand_ins: % stand-ins, % values', array_length(p_stand_ins, 1), array_length(p_values, 1);
  END IF;
  FOR i IN 1 .. coalesce(array_length(p_stand_ins, 1), 0) LOOP
    v_out := replace(v_out, p_stand_ins[i], p_values[i]);
  END LOOP;
  RETURN v_out;
END
$$;
