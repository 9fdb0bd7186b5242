"""The inspector's actions: each one previewed (nothing written), then applied on confirm.

Every action is a pair of functions over the ``MemoryBackend`` protocol, the same methods
the ``/v1`` routes call: ``preview`` reads what the change would touch and describes it
(the confirm page), ``apply`` makes it and describes what changed (the result page). No
SQL here, no second way to write.

Changing an entity's type has no API of its own (hosted ``PUT /v1/entities/{id}`` changes
only name and description), so it is made of two API calls: ``add_entity`` with the new
type (which may resolve to an existing entity of that type) and ``merge_entities`` of the
old entity into it, which moves its relationships and mentions and records ``SAME_AS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from nams_local.backend import MAX_LIST_LIMIT, MemoryBackend, message_deleter
from nams_local.errors import InvalidInputError, NotFoundError, NotSupportedError
from nams_local.models import Conversation, EntityDetails, EntityRelationship, Message

from .forms import MAX_TEXT_CHARS, Form

__all__ = ["ACTIONS", "Action", "Change"]


@dataclass
class Change:
    """What a confirm page asks about, or a result page reports."""

    title: str
    #: ``(what, before, after)``; ``after`` is ``None`` for a plain fact.
    rows: Sequence[tuple[str, str, str | None]] = field(default_factory=list)
    note: str | None = None
    #: Where to go next: ``(label, path below the inspector root)``.
    links: Sequence[tuple[str, str]] = field(default_factory=list)
    danger: bool = False


@dataclass(frozen=True)
class Action:
    label: str
    preview: Callable[[MemoryBackend, Form], Awaitable[Change]]
    apply: Callable[[MemoryBackend, Form], Awaitable[Change]]


def _text(value: str | None) -> str:
    return "—" if value is None or value == "" else value


def _entity_rows(entity: EntityDetails) -> list[tuple[str, str, str | None]]:
    return [
        ("name", entity.name, None),
        ("type", entity.type, None),
        ("description", _text(entity.description), None),
        ("relationships", str(len(entity.relationships)), None),
    ]


# -- correct ---------------------------------------------------------------------------


def _wanted(form: Form, entity: EntityDetails) -> tuple[str, str, str | None]:
    name = form.require("name").strip()
    entity_type = form.require("type").strip()
    description = form.get("description", max_chars=MAX_TEXT_CHARS)
    if description is not None:
        description = description.strip()
        if description == "" and not entity.description:
            description = None
    return name, entity_type, description


def _diff(
    entity: EntityDetails, name: str, entity_type: str, description: str | None
) -> list[tuple[str, str, str | None]]:
    rows: list[tuple[str, str, str | None]] = []
    if name != entity.name:
        rows.append(("name", entity.name, name))
    if entity_type != entity.type:
        rows.append(("type", entity.type, entity_type))
    if description is not None and description != (entity.description or ""):
        rows.append(("description", _text(entity.description), _text(description)))
    return rows


async def _correct_preview(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    rows = _diff(entity, *_wanted(form, entity))
    if not rows:
        raise InvalidInputError("nothing to change: the form holds the entity's current values")
    note = None
    if any(what == "type" for what, _, _ in rows):
        note = (
            "The type has no update of its own: a new entity of that type is created (or "
            "found) and this one is merged into it, keeping a SAME_AS record."
        )
    return Change(f"Correct {entity.name}", rows, note)


async def _correct_apply(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    name, entity_type, description = _wanted(form, entity)
    rows = _diff(entity, name, entity_type, description)
    if not rows:
        raise InvalidInputError("nothing to change: the form holds the entity's current values")
    new_description = description if description is not None else entity.description
    final_id = entity.id
    if entity_type != entity.type:
        retyped = await backend.add_entity(name, entity_type, new_description)
        if retyped.id == entity.id:
            raise InvalidInputError("the engine resolved the new type to this same entity")
        await backend.merge_entities(entity.id, retyped.id)
        final_id = retyped.id
    changed_name = name if name != entity.name else None
    changed_description = description if description != (entity.description or "") else None
    if changed_name is not None or changed_description is not None:
        await backend.update_entity(final_id, changed_name, changed_description)
    after = await backend.get_entity(final_id)
    return Change(
        f"Corrected {after.name}",
        _diff(entity, after.name, after.type, after.description or ""),
        links=[("Open the entity", f"/entities/{after.id}")],
    )


# -- feedback --------------------------------------------------------------------------


def _feedback_values(form: Form) -> tuple[float | None, bool | None]:
    raw_score = (form.get("user_score") or "").strip()
    score: float | None = None
    if raw_score:
        try:
            score = float(raw_score)
        except ValueError:
            raise InvalidInputError("score must be a number from 0 to 1") from None
        if not 0.0 <= score <= 1.0:
            raise InvalidInputError("score must be a number from 0 to 1")
    raw_confirmed = (form.get("confirmed_fact") or "").strip()
    if raw_confirmed not in ("", "yes", "no"):
        raise InvalidInputError("confirmed must be 'yes', 'no' or empty")
    confirmed = None if raw_confirmed == "" else raw_confirmed == "yes"
    if score is None and confirmed is None:
        raise InvalidInputError("give a score or say whether it is confirmed")
    return score, confirmed


def _feedback_rows(
    score: float | None, confirmed: bool | None
) -> list[tuple[str, str, str | None]]:
    rows: list[tuple[str, str, str | None]] = []
    if score is not None:
        rows.append(("your score", "—", f"{score:.2f}"))
    if confirmed is not None:
        rows.append(("confirmed by a person", "—", "yes" if confirmed else "no"))
    return rows


async def _feedback_preview(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    score, confirmed = _feedback_values(form)
    return Change(f"Feedback on {entity.name}", _feedback_rows(score, confirmed))


async def _feedback_apply(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    score, confirmed = _feedback_values(form)
    await backend.entity_feedback(entity.id, score, confirmed)
    after = await backend.get_entity(entity.id)
    rows = _feedback_rows(score, confirmed)
    rows.append(("confidence", f"{entity.confidence}", f"{after.confidence}"))
    return Change(
        f"Feedback recorded on {after.name}",
        rows,
        links=[("Open the entity", f"/entities/{after.id}")],
    )


# -- merge -----------------------------------------------------------------------------


async def _merge_pair(backend: MemoryBackend, form: Form) -> tuple[EntityDetails, EntityDetails]:
    source = await backend.get_entity(form.require("source_id"))
    target = await backend.get_entity(form.require("target_id"))
    if source.id == target.id:
        raise InvalidInputError("cannot merge an entity into itself")
    return source, target


async def _merge_preview(backend: MemoryBackend, form: Form) -> Change:
    source, target = await _merge_pair(backend, form)
    rows: list[tuple[str, str, str | None]] = [
        ("name", source.name, target.name),
        ("type", source.type, target.type),
        ("description", _text(source.description), _text(target.description)),
        ("relationships", str(len(source.relationships)), str(len(target.relationships))),
    ]
    return Change(
        f"Merge {source.name} into {target.name}",
        rows,
        "The first entity's relationships and mentions move to the second, which is kept; "
        "a SAME_AS record remembers the merge.",
        danger=True,
    )


async def _merge_apply(backend: MemoryBackend, form: Form) -> Change:
    source, target = await _merge_pair(backend, form)
    await backend.merge_entities(source.id, target.id)
    after = await backend.get_entity(target.id)
    return Change(
        f"Merged {source.name} into {after.name}",
        [
            (
                "relationships of " + after.name,
                str(len(target.relationships)),
                str(len(after.relationships)),
            )
        ],
        links=[("Open the merged entity", f"/entities/{after.id}")],
    )


# -- deletes ---------------------------------------------------------------------------


async def _delete_entity_preview(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    return Change(
        f"Delete {entity.name}",
        _entity_rows(entity),
        "The entity and its relationships are deleted.",
        danger=True,
    )


async def _delete_entity_apply(backend: MemoryBackend, form: Form) -> Change:
    entity = await backend.get_entity(form.require("entity_id"))
    await backend.delete_entity(entity.id)
    return Change(
        f"Deleted {entity.name}",
        [(what, before, "deleted") for what, before, _ in _entity_rows(entity)],
        links=[("Back to the entities", "/entities")],
    )


async def _relationship(
    backend: MemoryBackend, form: Form
) -> tuple[EntityDetails, EntityRelationship]:
    if not backend.capabilities.relationship_writes:
        raise NotSupportedError("this backend cannot delete relationships")
    entity = await backend.get_entity(form.require("entity_id"))
    wanted = form.require("relationship_id")
    for rel in entity.relationships:
        if rel.id == wanted:
            return entity, rel
    raise NotFoundError("no such relationship on this entity")


def _relationship_rows(
    entity: EntityDetails, rel: EntityRelationship
) -> list[tuple[str, str, str | None]]:
    ends = (rel.target_name or rel.target_id, entity.name)
    source, target = ends if rel.direction == "incoming" else ends[::-1]
    return [("relationship", f"{source} —{rel.type}→ {target}", None)]


async def _delete_relationship_preview(backend: MemoryBackend, form: Form) -> Change:
    entity, rel = await _relationship(backend, form)
    return Change(
        f"Delete a relationship of {entity.name}", _relationship_rows(entity, rel), danger=True
    )


async def _delete_relationship_apply(backend: MemoryBackend, form: Form) -> Change:
    entity, rel = await _relationship(backend, form)
    assert rel.id is not None
    await backend.delete_relationship(rel.id)
    after = await backend.get_entity(entity.id)
    rows = [(what, before, "deleted") for what, before, _ in _relationship_rows(entity, rel)]
    rows.append(
        (
            "relationships of " + entity.name,
            str(len(entity.relationships)),
            str(len(after.relationships)),
        )
    )
    return Change(
        "Deleted a relationship", rows, links=[("Open the entity", f"/entities/{entity.id}")]
    )


async def _delete_conversation_preview(backend: MemoryBackend, form: Form) -> Change:
    conversation = await backend.get_conversation(form.require("conversation_id"))
    return Change(
        "Delete a conversation",
        [
            ("conversation", conversation.id, None),
            ("user", _text(conversation.user_id), None),
            ("messages", str(conversation.message_count or 0), None),
        ],
        "Its messages and reasoning steps are deleted; entities extracted from it stay.",
        danger=True,
    )


async def _delete_conversation_apply(backend: MemoryBackend, form: Form) -> Change:
    conversation = await backend.get_conversation(form.require("conversation_id"))
    await backend.delete_conversation(conversation.id)
    return Change(
        "Deleted a conversation",
        [
            ("conversation", conversation.id, "deleted"),
            ("messages", str(conversation.message_count or 0), "0"),
        ],
        links=[("Back to the users", "/users")],
    )


async def _message(backend: MemoryBackend, form: Form) -> tuple[Conversation, Message]:
    if message_deleter(backend) is None:
        raise NotSupportedError("this backend cannot delete a single message")
    conversation = await backend.get_conversation(form.require("conversation_id"))
    wanted = form.require("message_id")
    for message in await backend.list_messages(conversation.id, limit=MAX_LIST_LIMIT):
        if message.id == wanted:
            return conversation, message
    raise NotFoundError("no such message in this conversation")


def _excerpt(text: str) -> str:
    return text if len(text) <= 300 else text[:299] + "…"


async def _delete_message_preview(backend: MemoryBackend, form: Form) -> Change:
    _, message = await _message(backend, form)
    return Change(
        "Delete a message",
        [("message", f"{message.role}: {_excerpt(message.content)}", None)],
        "The message and its search entries go; what was extracted from it stays (delete "
        "an entity on its own page).",
        danger=True,
    )


async def _delete_message_apply(backend: MemoryBackend, form: Form) -> Change:
    conversation, message = await _message(backend, form)
    deleter = message_deleter(backend)
    assert deleter is not None  # ``_message`` refused otherwise
    await deleter.delete_message(conversation.id, message.id)
    after = await backend.get_conversation(conversation.id)
    return Change(
        "Deleted a message",
        [
            ("message", f"{message.role}: {_excerpt(message.content)}", "deleted"),
            (
                "messages in the conversation",
                str(conversation.message_count),
                str(after.message_count),
            ),
        ],
        links=[("Back to the conversation", f"/conversations/{conversation.id}")],
    )


ACTIONS: dict[str, Action] = {
    "correct": Action("Correct", _correct_preview, _correct_apply),
    "feedback": Action("Give feedback", _feedback_preview, _feedback_apply),
    "merge": Action("Merge", _merge_preview, _merge_apply),
    "delete-entity": Action("Delete", _delete_entity_preview, _delete_entity_apply),
    "delete-relationship": Action(
        "Delete", _delete_relationship_preview, _delete_relationship_apply
    ),
    "delete-conversation": Action(
        "Delete", _delete_conversation_preview, _delete_conversation_apply
    ),
    "delete-message": Action("Delete", _delete_message_preview, _delete_message_apply),
}
