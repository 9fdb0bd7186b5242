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
    LargeBinary,
    MetaData,
    Table,
    Text,
)

__all__ = [
    "FTS_DDL",
    "FTS_VOCAB_DDL",
    "OPEN_EDGES_INDEX_DDL",
    "SCHEMA_VERSION",
    "VALIDITY_COLUMNS",
    "conversations",
    "entities",
    "entity_mentions",
    "extraction_units",
    "fts_queue",
    "messages",
    "meta",
    "metadata",
    "observations",
    "reflections",
    "relationships",
    "schema_version",
    "steps",
    "tool_calls",
    "user_entities",
    "vector_queue",
]

#: Bump when the schema changes, with one more step in ``migrations.STEPS``; ``store.py``
#: refuses a database from a newer version and upgrades an older one in place.
SCHEMA_VERSION = 2

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
    #: The resolution key a live entity holds, unique per workspace among live entities
    #: (the partial unique index is created by ``entity_keys.migrate``); NULL: holds none.
    Column("resolve_key", Text, nullable=True),
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
    #: When we learned it (transaction time; the API's ``recordedAt``).
    Column("created_at", Text, nullable=False),
    # -- validity in time (schema version 2, see ``validity.py``) --
    #: World time the fact holds from / until: ISO dates as precise as what was said
    #: ("2021", "2021-03", "2021-03-15"), so string order is time order. NULL from: since
    #: whenever (``created_at`` stands in when ordering); NULL until: still holds.
    Column("valid_from", Text, nullable=True),
    Column("valid_until", Text, nullable=True),
    #: When the edge was closed (transaction time), and by which edge, if a newer fact did.
    Column("invalidated_at", Text, nullable=True),
    Column("superseded_by", Text, nullable=True),
    #: The message the fact was extracted from (API id; NULL for explicit writes).
    Column("source_message_id", Text, nullable=True),
    Index("ix_relationships_source", "source_pk"),
    Index("ix_relationships_target", "target_pk"),
    Index("ix_relationships_ws", "workspace"),
)

#: The columns schema version 2 added to ``relationships`` (``migrations.py`` adds them).
VALIDITY_COLUMNS = (
    "valid_from",
    "valid_until",
    "invalidated_at",
    "superseded_by",
    "source_message_id",
)
#: Supersession looks up a subject's edges of one type (``validity.py``).
OPEN_EDGES_INDEX_DDL = (
    "CREATE INDEX IF NOT EXISTS ix_relationships_source_type ON relationships (source_pk, type)"
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

#: Messages committed but not embedded yet (``vector_lane.py`` embeds them in batches after
#: the write is acknowledged; rows a crash left are embedded when the store next opens).
vector_queue = Table(
    "vector_queue",
    metadata,
    Column("message_pk", Integer, ForeignKey("messages.pk", ondelete="CASCADE"), primary_key=True),
)

#: Messages committed but not in ``messages_fts`` yet: a write with a lot of text leaves its
#: full-text indexing to small writer units after its commit (``deferred_fts.py``), and a
#: text search in the workspace indexes what is left before it reads. Created by
#: ``create_all`` on every open, so older files gain it without a migration step.
fts_queue = Table(
    "fts_queue",
    metadata,
    Column("message_pk", Integer, ForeignKey("messages.pk", ondelete="CASCADE"), primary_key=True),
    Column("workspace", Text, nullable=False),
    Index("fts_queue_workspace", "workspace"),
)

#: The person entity that stands for a user of a workspace: extraction binds "I" (and an
#: assistant's "you") to it, and renames it once a message states the user's name.
user_entities = Table(
    "user_entities",
    metadata,
    Column("workspace", Text, primary_key=True),
    Column("user_id", Text, primary_key=True),
    Column("entity_pk", Integer, ForeignKey("entities.pk", ondelete="CASCADE"), nullable=False),
    #: 1 once the entity carries the user's stated name (else it is a placeholder).
    Column("named", Integer, nullable=False, default=0),
)

#: Full-text indexes: ``body`` is searched (porter-stemmed BM25); ``scope`` holds
#: workspace / user / conversation tokens so a scoped search is an FTS intersection.
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5("
    "body, scope, tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS entities_fts USING fts5("
    "body, scope, tokenize='porter unicode61 remove_diacritics 2')",
    # Key/value items (``items.py``): rowid = store_items.pk, scope = the workspace token.
    "CREATE VIRTUAL TABLE IF NOT EXISTS store_items_fts USING fts5("
    "body, scope, tokenize='porter unicode61 remove_diacritics 2')",
)
#: A row-count view of the message index's terms (``fts_bm25``: BM25's document counts
#: without reading every query term's doclist). An ``fts5vocab`` table stores nothing: it
#: reads the index it is over. (Entity searches match too many rows to be scored there.)
FTS_VOCAB_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_vocabulary USING fts5vocab(messages_fts, col)",
)
FTS_RANK = (
    "INSERT INTO messages_fts(messages_fts, rank) VALUES('rank', 'bm25(1.0, 0.0)')",
    "INSERT INTO entities_fts(entities_fts, rank) VALUES('rank', 'bm25(1.0, 0.0)')",
)


# -- legacy memory (bridge) -----------------------------------------------------------------
# Concepts of the original agent-memory package that the hosted API lacks: sessions named by
# free strings, preferences, facts, task traces with numbered steps and JSON tool calls.
# They live in the same workspaces as everything else (see ``backends/sqlite/legacy/``).

#: A free-form session name ↔ the conversation that holds its messages.
sessions = Table(
    "sessions",
    metadata,
    Column("pk", Integer, primary_key=True),
    Column("workspace", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    _owned_by_conversation(),
    Index("ux_sessions_ws_session", "workspace", "session_id", unique=True),
    Index("ix_sessions_conversation", "conversation_pk"),
)

preferences = Table(
    "preferences",
    metadata,
    *_identity(),
    Column("category", Text, nullable=False),
    Column("preference", Text, nullable=False),
    Column("context", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_preferences_ws_category", "workspace", "category"),
)

facts = Table(
    "facts",
    metadata,
    *_identity(),
    Column("subject", Text, nullable=False),
    Column("predicate", Text, nullable=False),
    Column("object", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Index("ix_facts_ws_subject", "workspace", "subject"),
)

traces = Table(
    "traces",
    metadata,
    *_identity(),
    Column("session_id", Text, nullable=False),
    Column("task", Text, nullable=False),
    Column("outcome", Text, nullable=True),
    #: NULL until completed; then 0 or 1.
    Column("success", Integer, nullable=True),
    Column("started_at", Text, nullable=False),
    Column("completed_at", Text, nullable=True),
    Index("ix_traces_ws_session", "workspace", "session_id"),
)

trace_steps = Table(
    "trace_steps",
    metadata,
    *_identity(),
    Column("trace_pk", Integer, ForeignKey("traces.pk", ondelete="CASCADE"), nullable=False),
    Column("step_number", Integer, nullable=False),
    Column("thought", Text, nullable=True),
    Column("action", Text, nullable=True),
    Column("observation", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ux_trace_steps_number", "trace_pk", "step_number", unique=True),
)

#: Tool calls of trace steps: ``arguments`` and ``result`` are JSON text of any JSON type.
trace_tool_calls = Table(
    "trace_tool_calls",
    metadata,
    *_identity(),
    Column("step_pk", Integer, ForeignKey("trace_steps.pk", ondelete="CASCADE"), nullable=False),
    Column("tool_name", Text, nullable=False),
    Column("arguments", Text, nullable=False),
    Column("result", Text, nullable=True),
    Column("status", Text, nullable=False),
    Column("duration_ms", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("created_at", Text, nullable=False),
    Index("ix_trace_tool_calls_step", "step_pk", "pk"),
    Index("ix_trace_tool_calls_ws_tool", "workspace", "tool_name"),
)

#: The canonical name an explicit merge gave an entity (``merge_duplicate_entities``).
entity_canonical_names = Table(
    "entity_canonical_names",
    metadata,
    Column("entity_pk", Integer, ForeignKey("entities.pk", ondelete="CASCADE"), primary_key=True),
    Column("canonical_name", Text, nullable=False),
)

# -- key/value items (LangGraph store) -------------------------------------------------------
#: Namespaced documents (``items.py``). ``ns_path`` is the namespace's labels each followed
#: by NUL (labels cannot hold NUL), so "under this prefix" is one index range scan; times
#: are epoch seconds; ``embedding`` is the float32 vector of ``body`` (NULL: not embedded).
store_items = Table(
    "store_items",
    metadata,
    Column("pk", Integer, primary_key=True),
    Column("workspace", Text, nullable=False),
    Column("ns_path", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    Column("body", Text, nullable=True),
    Column("embedding", LargeBinary, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("ttl_minutes", Float, nullable=True),
    Column("expires_at", Float, nullable=True),
    Index("ux_store_items_key", "workspace", "ns_path", "key", unique=True),
    Index("ix_store_items_updated", "workspace", "updated_at"),
    Index("ix_store_items_expires", "workspace", "expires_at"),
)

__all__ += [
    "entity_canonical_names",
    "facts",
    "preferences",
    "sessions",
    "store_items",
    "trace_steps",
    "trace_tool_calls",
    "traces",
]
