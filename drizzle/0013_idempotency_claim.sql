-- Refusing a taken idempotency key with an error instead of an empty result, so that a write's
-- first statements can go to the database in one flight with the claim (server/api/mutation.ts):
-- when the key is taken, the claim fails, the statements sent behind it fail with it and do
-- nothing, and the transaction rolls back. The claim calls this only when it took no row, through
-- CASE, which evaluates a volatile function only on the branch taken.
CREATE FUNCTION idempotency_key_taken() RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'idempotency key already used' USING ERRCODE = 'AW409';
END
$$;
