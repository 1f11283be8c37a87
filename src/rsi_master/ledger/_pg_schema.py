"""The ledger's PostgreSQL schema: one database schema per run, made by a function the operator
installs once, so the role a run writes with needs no right to create or alter anything.

`install` (as a role that may create schemas) puts the shared trigger functions and
`rsi_ledger.create_run` in schema `rsi_ledger`; `create_run` is SECURITY DEFINER, so the
tables it makes belong to the installing role and the calling (writer) role gets SELECT and
INSERT on them, and UPDATE of the seal's columns only (the seal is replaced by every write,
forward only). The same triggers as SQLite's refuse updates, deletes, truncation and inserts
that do not extend the chain even for the owner; they are ENABLE ALWAYS so that
`session_replication_role = replica` does not switch them off. `verify` compares the catalog
with `EXPECTED` (`describe`), so a trigger disabled, dropped or replaced is named.
"""

from __future__ import annotations

from typing import Protocol

from ._event import GENESIS_HASH

__all__ = ["EXPECTED", "FUNCTIONS", "RUN_DDL", "describe", "install_sql"]

_TABLES = ("meta", "events", "artifact_refs", "checkpoints")

FUNCTIONS = {
    "refuse": """
BEGIN
  RAISE EXCEPTION 'ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'integrity_constraint_violation';
END""",
    # The chain, enforced by the database: an event names the hash at seq - 1 (the genesis
    # hash for the first), so nothing is inserted out of order, twice or in the middle.
    "chain": f"""
DECLARE want text;
BEGIN
  EXECUTE format('SELECT hash FROM %I.events WHERE seq = $1', TG_TABLE_SCHEMA) INTO want USING NEW.seq - 1;
  IF NEW.seq < 0 OR NEW.prev_hash IS DISTINCT FROM coalesce(want, '{GENESIS_HASH}') THEN
    RAISE EXCEPTION 'event does not extend the chain' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END""",
    "seal_forward": """
BEGIN
  IF NEW.tree_size < OLD.tree_size OR NEW.id <> 0 THEN
    RAISE EXCEPTION 'the seal only moves forward' USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END""",
}

# Per run; %1$I is the run's schema (its run id), quoted by format().
RUN_DDL = [
    "CREATE SCHEMA %1$I",
    "CREATE TABLE %1$I.meta (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE %1$I.events (seq bigint PRIMARY KEY, prev_hash text NOT NULL UNIQUE, hash text NOT NULL,"
    " kind text NOT NULL, actor_role text NOT NULL, actor_id text NOT NULL, ts text NOT NULL, body bytea NOT NULL)",
    "CREATE INDEX events_kind ON %1$I.events (kind, seq)",
    "CREATE INDEX events_actor ON %1$I.events (actor_role, actor_id, seq)",
    "CREATE TABLE %1$I.artifact_refs (seq bigint NOT NULL, digest text NOT NULL, role text NOT NULL,"
    " name text NOT NULL, PRIMARY KEY (digest, role, seq, name))",
    "CREATE INDEX artifact_refs_seq ON %1$I.artifact_refs (seq)",
    "CREATE TABLE %1$I.checkpoints (tree_size bigint PRIMARY KEY, root text NOT NULL, body bytea NOT NULL,"
    " signature text NOT NULL)",
    "CREATE TABLE %1$I.seal (id integer PRIMARY KEY CHECK (id = 0), tree_size bigint NOT NULL,"
    " body bytea NOT NULL, signature text NOT NULL)",
    "CREATE TRIGGER events_chain BEFORE INSERT ON %1$I.events FOR EACH ROW EXECUTE FUNCTION rsi_ledger.chain()",
    *(
        stmt
        for t in _TABLES
        for stmt in (
            f"CREATE TRIGGER {t}_no_change BEFORE UPDATE OR DELETE ON %1$I.{t}"
            " FOR EACH ROW EXECUTE FUNCTION rsi_ledger.refuse()",
            f"CREATE TRIGGER {t}_no_truncate BEFORE TRUNCATE ON %1$I.{t}"
            " FOR EACH STATEMENT EXECUTE FUNCTION rsi_ledger.refuse()",
        )
    ),
    "CREATE TRIGGER seal_no_delete BEFORE DELETE ON %1$I.seal FOR EACH ROW EXECUTE FUNCTION rsi_ledger.refuse()",
    "CREATE TRIGGER seal_no_truncate BEFORE TRUNCATE ON %1$I.seal FOR EACH STATEMENT EXECUTE FUNCTION rsi_ledger.refuse()",
    "CREATE TRIGGER seal_forward BEFORE UPDATE ON %1$I.seal FOR EACH ROW EXECUTE FUNCTION rsi_ledger.seal_forward()",
    *(
        f"ALTER TABLE %1$I.{t} ENABLE ALWAYS TRIGGER {t}_{what}"
        for t, whats in [(t, ("no_change", "no_truncate")) for t in _TABLES]
        + [("events", ("chain",)), ("seal", ("no_delete", "no_truncate", "forward"))]
        for what in whats
    ),
    "REVOKE ALL ON ALL TABLES IN SCHEMA %1$I FROM PUBLIC",
    "GRANT USAGE ON SCHEMA %1$I TO SESSION_USER",
    "GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA %1$I TO SESSION_USER",
    "GRANT UPDATE (tree_size, body, signature) ON %1$I.seal TO SESSION_USER",
]


def _dollar(body: str) -> str:
    assert "$fn$" not in body
    return f"$fn${body}$fn$"


def install_sql(writers: tuple[str, ...]) -> list[str]:
    """Statements that install (or refresh) schema `rsi_ledger`; `writers` may create runs."""
    out = [
        "CREATE SCHEMA IF NOT EXISTS rsi_ledger",
        "REVOKE CREATE ON SCHEMA rsi_ledger FROM PUBLIC",
    ]
    for name, body in FUNCTIONS.items():
        out.append(
            f"CREATE OR REPLACE FUNCTION rsi_ledger.{name}() RETURNS trigger LANGUAGE plpgsql AS {_dollar(body)}"
        )
    ddl = ", ".join("'" + s.replace("'", "''") + "'" for s in RUN_DDL)
    create = f"""
DECLARE stmt text;
BEGIN
  IF run IS NULL OR run !~ '^[A-Za-z0-9._-]{{1,63}}$' THEN
    RAISE EXCEPTION 'invalid run id %', run USING ERRCODE = 'invalid_parameter_value';
  END IF;
  FOREACH stmt IN ARRAY ARRAY[{ddl}] LOOP
    EXECUTE format(stmt, run);
  END LOOP;
END"""
    out.append(
        "CREATE OR REPLACE FUNCTION rsi_ledger.create_run(run text) RETURNS void LANGUAGE plpgsql"
        f" SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {_dollar(create)}"
    )
    out.append("REVOKE ALL ON FUNCTION rsi_ledger.create_run(text) FROM PUBLIC")
    out.append("GRANT USAGE ON SCHEMA rsi_ledger TO PUBLIC")
    for role in writers:
        quoted = '"' + role.replace('"', '""') + '"'
        out.append(f"GRANT EXECUTE ON FUNCTION rsi_ledger.create_run(text) TO {quoted}")
    return out


class _Cursor(Protocol):
    def fetchall(self) -> list[tuple[object, ...]]: ...


class _Executes(Protocol):
    def execute(self, sql: str, params: tuple[object, ...] = ..., /) -> _Cursor: ...


# What the catalog says about a run's schema, with the schema's own name taken out: tables and
# their columns, constraints, indexes, triggers (with whether they fire) and the shared functions.
_DESCRIBE = """
SELECT 'column', c.relname || '.' || a.attname, format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull
  THEN ' NOT NULL' ELSE '' END
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(s)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL
SELECT 'relation', c.relname, c.relkind::text || CASE WHEN c.relrowsecurity THEN ' rls' ELSE '' END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %(s)s
UNION ALL
SELECT 'constraint', r.conname, pg_get_constraintdef(r.oid)
FROM pg_constraint r JOIN pg_namespace n ON n.oid = r.connamespace WHERE n.nspname = %(s)s
UNION ALL
SELECT 'index', i.indexname, replace(i.indexdef, quote_ident(%(s)s) || '.', '')
FROM pg_indexes i WHERE i.schemaname = %(s)s
UNION ALL
SELECT 'trigger', t.tgname, replace(pg_get_triggerdef(t.oid), quote_ident(%(s)s) || '.', '') || ' ' || t.tgenabled::text
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(s)s
UNION ALL
SELECT 'rule', r.rulename, r.definition FROM pg_rules r WHERE r.schemaname = %(s)s
UNION ALL
SELECT 'policy', p.policyname, p.cmd FROM pg_policies p WHERE p.schemaname = %(s)s
UNION ALL
SELECT 'function', p.proname, md5(p.prosrc) || CASE WHEN p.prosecdef THEN ' definer' ELSE '' END
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'rsi_ledger' AND p.proname IN ('refuse', 'chain', 'seal_forward')
"""


def describe(conn: _Executes, schema: str) -> frozenset[tuple[str, str, str]]:
    """The catalog's account of a run's schema (see `_DESCRIBE`)."""
    rows = conn.execute(_DESCRIBE, {"s": schema}).fetchall()  # type: ignore[arg-type]
    return frozenset((str(a), str(b), str(c)) for a, b, c in rows)


def _expected() -> frozenset[tuple[str, str, str]]:
    import hashlib

    cols = {
        "meta": [("key", "text"), ("value", "text")],
        "events": [
            ("seq", "bigint"),
            ("prev_hash", "text"),
            ("hash", "text"),
            ("kind", "text"),
            ("actor_role", "text"),
            ("actor_id", "text"),
            ("ts", "text"),
            ("body", "bytea"),
        ],
        "artifact_refs": [("seq", "bigint"), ("digest", "text"), ("role", "text"), ("name", "text")],
        "checkpoints": [("tree_size", "bigint"), ("root", "text"), ("body", "bytea"), ("signature", "text")],
        "seal": [("id", "integer"), ("tree_size", "bigint"), ("body", "bytea"), ("signature", "text")],
    }
    out = {("column", f"{t}.{c}", f"{ty} NOT NULL") for t, cs in cols.items() for c, ty in cs}
    out |= {("relation", t, "r") for t in cols}
    pkeys = {
        "meta": "key",
        "events": "seq",
        "artifact_refs": "digest, role, seq, name",
        "checkpoints": "tree_size",
        "seal": "id",
    }
    out |= {("constraint", f"{t}_pkey", f"PRIMARY KEY ({k})") for t, k in pkeys.items()}
    out |= {
        ("constraint", "events_prev_hash_key", "UNIQUE (prev_hash)"),
        ("constraint", "seal_id_check", "CHECK ((id = 0))"),
    }
    indexes = {f"{t}_pkey": f"CREATE UNIQUE INDEX {t}_pkey ON {t} USING btree ({k})" for t, k in pkeys.items()}
    indexes |= {
        "events_prev_hash_key": "CREATE UNIQUE INDEX events_prev_hash_key ON events USING btree (prev_hash)",
        "events_kind": "CREATE INDEX events_kind ON events USING btree (kind, seq)",
        "events_actor": "CREATE INDEX events_actor ON events USING btree (actor_role, actor_id, seq)",
        "artifact_refs_seq": "CREATE INDEX artifact_refs_seq ON artifact_refs USING btree (seq)",
    }
    out |= {("index", n, d) for n, d in indexes.items()}
    out |= {("relation", n, "i") for n in indexes}
    trig = {"events_chain": "BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION rsi_ledger.chain()"}
    for t in _TABLES:
        trig[f"{t}_no_change"] = f"BEFORE DELETE OR UPDATE ON {t} FOR EACH ROW EXECUTE FUNCTION rsi_ledger.refuse()"
        trig[f"{t}_no_truncate"] = f"BEFORE TRUNCATE ON {t} FOR EACH STATEMENT EXECUTE FUNCTION rsi_ledger.refuse()"
    trig["seal_no_delete"] = "BEFORE DELETE ON seal FOR EACH ROW EXECUTE FUNCTION rsi_ledger.refuse()"
    trig["seal_no_truncate"] = "BEFORE TRUNCATE ON seal FOR EACH STATEMENT EXECUTE FUNCTION rsi_ledger.refuse()"
    trig["seal_forward"] = "BEFORE UPDATE ON seal FOR EACH ROW EXECUTE FUNCTION rsi_ledger.seal_forward()"
    out |= {("trigger", n, f"CREATE TRIGGER {n} {d} A") for n, d in trig.items()}
    out |= {("function", n, hashlib.md5(b.encode()).hexdigest()) for n, b in FUNCTIONS.items()}
    return frozenset(out)


EXPECTED = _expected()
