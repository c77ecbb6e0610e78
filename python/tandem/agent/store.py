"""The NF agent's persistent state: one SQLite file (``--state-db``), WAL mode.

What it holds: NF instances (name, type, configuration, cost, device, virtual
ports and the physical port each one sits on), the virtual rules in ovs-ofctl
text, the placement decisions the agent took, and the migrations it ran with
their progress. The database is the source of truth a restarted agent
reconciles the switches and NFs with (``service.AgentService.start``).

Every change is one transaction (``with self.conn``): a failure half-way, or a
bad input caught by a constraint, rolls the whole change back, so the file is
never left half-written. Cost: one small transaction per API write.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nfs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    config TEXT NOT NULL,
    cost TEXT NOT NULL,
    origin TEXT NOT NULL CHECK (origin IN ('scenario', 'api')),
    device TEXT NOT NULL,
    vports TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tbl INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    match_key TEXT NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (tbl, priority, match_key)
);
CREATE TABLE IF NOT EXISTS placements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    decision TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS migrations (
    id TEXT PRIMARY KEY,
    nf TEXT NOT NULL,
    source TEXT NOT NULL,
    destination TEXT NOT NULL,
    status TEXT NOT NULL,
    steps TEXT NOT NULL,
    state_bytes INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created REAL NOT NULL,
    finished REAL
);
"""


class StoreError(RuntimeError):
    """The state database cannot be opened or is not an agent database."""


@dataclass
class NfRecord:
    id: str
    name: str
    kind: str
    config: dict[str, Any]
    cost: dict[str, float]
    origin: str
    device: str
    vports: list[int]
    created: float = field(default_factory=time.time)


@dataclass
class MigrationRecord:
    id: str
    nf: str
    source: str
    destination: str
    status: str  # queued | running | done | failed
    steps: list[dict[str, Any]]
    state_bytes: int = 0
    error: Optional[str] = None
    created: float = field(default_factory=time.time)
    finished: Optional[float] = None


class Store:
    """The agent database. Not thread-safe: the agent uses it from its event loop only."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        try:
            self.conn = sqlite3.connect(self.path)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            with self.conn:
                self.conn.executescript(_SCHEMA)
            v = self.get_meta("schema_version")
            if v is None:
                self.set_meta("schema_version", str(SCHEMA_VERSION))
            elif v != str(SCHEMA_VERSION):
                raise StoreError(f"{self.path}: state database schema {v}, this agent writes {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable state database: {e}") from None

    def close(self) -> None:
        self.conn.close()

    # ------------------------------------------------------------ meta
    def get_meta(self, key: str) -> Optional[str]:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.conn:
            self.conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                              (key, value))

    # ------------------------------------------------------------ NFs
    def nfs(self) -> list[NfRecord]:
        rows = self.conn.execute("SELECT id, name, kind, config, cost, origin, device, vports, created FROM nfs ORDER BY created, name")
        return [NfRecord(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]), r[5], r[6], json.loads(r[7]), r[8]) for r in rows]

    def put_nf(self, nf: NfRecord) -> None:
        with self.conn:
            self._put_nf(nf)

    def _put_nf(self, nf: NfRecord) -> None:
        self.conn.execute(
            "INSERT INTO nfs (id, name, kind, config, cost, origin, device, vports, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET device = excluded.device, vports = excluded.vports, config = excluded.config, "
            "cost = excluded.cost",
            (nf.id, nf.name, nf.kind, json.dumps(nf.config, sort_keys=True), json.dumps(nf.cost, sort_keys=True), nf.origin,
             nf.device, json.dumps(nf.vports), nf.created))

    def delete_nf(self, nf_id: str) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM nfs WHERE id = ?", (nf_id,))

    # ------------------------------------------------------------ rules
    def rules(self) -> list[tuple[int, str]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT id, text FROM rules ORDER BY id")]

    def put_rule(self, table: int, priority: int, match_key: str, text: str) -> int:
        """Insert or replace the rule with this (table, priority, match); returns its id (kept on replace)."""
        with self.conn:
            self.conn.execute(
                "INSERT INTO rules (tbl, priority, match_key, text) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(tbl, priority, match_key) DO UPDATE SET text = excluded.text",
                (table, priority, match_key, text))
            return self.conn.execute("SELECT id FROM rules WHERE tbl = ? AND priority = ? AND match_key = ?",
                                     (table, priority, match_key)).fetchone()[0]

    def delete_rule(self, rule_id: int) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM rules WHERE id = ?", (rule_id,))

    def replace_rules(self, rows: Iterable[tuple[int, int, str, str]]) -> None:
        """Make the rule table exactly ``rows`` (table, priority, match key, text); ids of kept rules stay."""
        rows = list(rows)
        with self.conn:
            keep = {(t, p, k) for t, p, k, _ in rows}
            for rid, t, p, k in self.conn.execute("SELECT id, tbl, priority, match_key FROM rules").fetchall():
                if (t, p, k) not in keep:
                    self.conn.execute("DELETE FROM rules WHERE id = ?", (rid,))
            for t, p, k, text in rows:
                self.conn.execute(
                    "INSERT INTO rules (tbl, priority, match_key, text) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(tbl, priority, match_key) DO UPDATE SET text = excluded.text", (t, p, k, text))

    # ------------------------------------------------------------ placements
    def add_placement(self, decision: dict[str, Any]) -> int:
        with self.conn:
            cur = self.conn.execute("INSERT INTO placements (created, decision) VALUES (?, ?)",
                                    (time.time(), json.dumps(decision, sort_keys=True)))
            return int(cur.lastrowid)

    def last_placement(self) -> Optional[dict[str, Any]]:
        row = self.conn.execute("SELECT id, created, decision FROM placements ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else {"id": row[0], "created": row[1], **json.loads(row[2])}

    # ------------------------------------------------------------ migrations
    def put_migration(self, m: MigrationRecord, nf: Optional[NfRecord] = None) -> None:
        """Record a migration's progress; with ``nf``, the NF's new place in the same transaction."""
        with self.conn:
            self.conn.execute(
                "INSERT INTO migrations (id, nf, source, destination, status, steps, state_bytes, error, created, finished) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET status = excluded.status, "
                "steps = excluded.steps, state_bytes = excluded.state_bytes, error = excluded.error, finished = excluded.finished",
                (m.id, m.nf, m.source, m.destination, m.status, json.dumps(m.steps), m.state_bytes, m.error, m.created,
                 m.finished))
            if nf is not None:
                self._put_nf(nf)

    def migrations(self) -> list[MigrationRecord]:
        rows = self.conn.execute("SELECT id, nf, source, destination, status, steps, state_bytes, error, created, finished "
                                 "FROM migrations ORDER BY created, id")
        return [MigrationRecord(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7], r[8], r[9]) for r in rows]
