"""The local engine's schema, owned in code.

Plain tables hold the truth (SQLAlchemy Core ``Table`` objects, so statements are typed
and readable); FTS5 tables hold the text index and the vector index lives in
``vectors.py``. Every row carries its ``workspace``: no statement in the engine reads or
writes without filtering on it. Integer ``pk`` columns link rows (and are the rowids of the
FTS and vector indexes); the string ``id`` (UUID4 text) is what the API shows.
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)

__all__ = [
    "FTS_DDL",
    "SCHEMA_VERSION",
    "conversations",
    "entities",
    "entity_mentions",
    "extraction_units",
    "messages",
    "meta",
    "metadata",
    "observations",
    "reflections",
    "relationships",
    "schema_version",
    "steps",
    "tool_calls",
]

#: Bump when the schema changes; ``store.py`` refuses a database from a newer version.
SCHEMA_VERSION = 1

metadata = MetaData()


def _identity() -> tuple[Column[int], Column[str], Column[str]]:
    """The columns every API-visible row starts with: ``pk``, ``id`` and ``workspace``."""
    return (
        Column("pk", Integer, primary_key=True),
        Column("id", Text, nullable=False, unique=True),
        Column("workspace", Text, nullable=False),
    )


def _owned_by_conversation() -> Column[int]:
    """A row that lives and dies with its conversation."""
    return Column(
        "conversation_pk",
        Integer,
        ForeignKey("conversations.pk", ondelete="CASCADE"),
        nullable=False,
    )


schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, nullable=False),
)

#: Key/value facts about the store (e.g. which embedder built the vector index).
meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

conversations = Table(
    "conversations",
    metadata,
    *_identity(),
    Column("user_id", Text, nullable=True),
    Column("metadata", Text, nullable=False, default="{}"),
    Column("message_count", Integer, nullable=False, default=0),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Index("ix_conversations_ws_user", "workspace", "user_id", "updated_at"),
    Index("ix_conversations_ws_updated", "workspace", "updated_at"),
)

messages = Table(
    "messages",
    metadata,
    *_identity(),
    _owned_by_conversation(),
    Column("role", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("metadata", Text, nullable=False, default="{}"),
    Column("token_count", Integer, nullable=False),
    Column("created_at", Text, nullable=False),
    Index("ix_messages_conversation", "conversation_pk", "pk"),
)

entities = Table(
    "entities",
    metadata,
    *_identity(),
    Column("name", Text, nullable=False),
    #: The name as compared for identity (see ``rows.name_key``).
    Column("name_key", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("description", Text, nullable=True),
    Column("properties", Text, nullable=False, default="{}"),
    Column("confidence", Float, nullable=True),
    Column("source_stage", Text, nullable=True),
    Column("user_score", Float, nullable=True),
    Column("confirmed", Integer, nullable=True),
    #: Set when this entity was merged into another: it is then inert (hidden).
    Column("merged_into_pk", Integer, ForeignKey("entities.pk"), nullable=True),
    Column("created_at", Text, nullable=False),
    Column("updated_at", Text, nullable=False),
    Index("ix_entities_ws_name_key", "workspace", "name_key"),
    Index("ix_entities_ws_type", "workspace", "type"),
)

relationships = Table(
    "relationships",
    metadata,
    *_identity(),
    Column("source_pk", Integer, ForeignKey("entities.pk", ondelete="CASCADE"), nullable=False),
    Column("target_pk", Integer, ForeignKey("entities.pk", ondelete="CASCADE"), nullable=False),
    Column("type", Text, nullable=False),
    Column("properties", Text, nullable=False, default="{}"),
    Column("confidence", Float, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_relationships_source", "source_pk"),
    Index("ix_relationships_target", "target_pk"),
    Index("ix_relationships_ws", "workspace"),
)

#: Explicit entity ↔ message links (written by extraction); history also finds mentions
#: by name through the text index.
entity_mentions = Table(
    "entity_mentions",
    metadata,
    Column("entity_pk", Integer, ForeignKey("entities.pk", ondelete="CASCADE"), primary_key=True),
    Column("message_pk", Integer, ForeignKey("messages.pk", ondelete="CASCADE"), primary_key=True),
)

steps = Table(
    "steps",
    metadata,
    *_identity(),
    _owned_by_conversation(),
    Column("reasoning", Text, nullable=False),
    Column("action_taken", Text, nullable=False),
    Column("result", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_steps_conversation", "conversation_pk", "pk"),
)

tool_calls = Table(
    "tool_calls",
    metadata,
    *_identity(),
    Column("step_pk", Integer, ForeignKey("steps.pk", ondelete="CASCADE"), nullable=True),
    Column("tool_name", Text, nullable=False),
    Column("input", Text, nullable=False),
    Column("output", Text, nullable=True),
    Column("status", Text, nullable=False),
    Column("duration_ms", Integer, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_tool_calls_step", "step_pk", "pk"),
)

observations = Table(
    "observations",
    metadata,
    *_identity(),
    _owned_by_conversation(),
    Column("content", Text, nullable=False),
    Column("source_msg_ids", Text, nullable=False, default="[]"),
    Column("created_at", Text, nullable=False),
    Index("ix_observations_conversation", "conversation_pk", "pk"),
)

reflections = Table(
    "reflections",
    metadata,
    *_identity(),
    _owned_by_conversation(),
    Column("content", Text, nullable=False),
    Column("source_obs_ids", Text, nullable=False, default="[]"),
    Column("superseded_by_id", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_reflections_conversation", "conversation_pk", "pk"),
)

#: Per-message extraction state (status, attempts, last run, error).
extraction_units = Table(
    "extraction_units",
    metadata,
    Column("message_pk", Integer, ForeignKey("messages.pk", ondelete="CASCADE"), primary_key=True),
    Column("status", Text, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("last_run", Text, nullable=True),
    Column("error", Text, nullable=True),
)

#: Full-text indexes: ``body`` is searched (porter-stemmed BM25); ``scope`` holds
#: workspace / user / conversation tokens so a scoped search is an FTS intersection.
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
    "body, scope, tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS entities_fts USING fts5("
    "body, scope, tokenize='porter unicode61 remove_diacritics 2')",
)
FTS_RANK = (
    "INSERT INTO messages_fts(messages_fts, rank) VALUES('rank', 'bm25(1.0, 0.0)')",
    "INSERT INTO entities_fts(entities_fts, rank) VALUES('rank', 'bm25(1.0, 0.0)')",
)
