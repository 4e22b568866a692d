-- The head row only moves forward: rewinding it would hide the events past it from verification
-- and make the next append collide. Only ledger_append moves it; nothing deletes it.
CREATE FUNCTION ledger_heads_forward_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'ledger_heads rows cannot be deleted' USING ERRCODE = 'restrict_violation';
  END IF;
  IF NEW.sequence < OLD.sequence OR NEW.workspace_id <> OLD.workspace_id
     OR (NEW.sequence = OLD.sequence AND NEW.head_hash <> OLD.head_hash) THEN
    RAISE EXCEPTION 'ledger_heads only moves forward' USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER ledger_heads_forward_only
  BEFORE UPDATE OR DELETE ON ledger_heads
  FOR EACH ROW EXECUTE FUNCTION ledger_heads_forward_only();
--> statement-breakpoint
-- The hash is computed over convert_to(text, 'UTF8'); on a database of another encoding the bytes
-- hashed here and by clients could differ, so refuse to install on one.
DO $$
BEGIN
  IF current_setting('server_encoding') <> 'UTF8' THEN
    RAISE EXCEPTION 'the Accountable Work Service needs a UTF8 database (this one is %)', current_setting('server_encoding');
  END IF;
END
$$;
