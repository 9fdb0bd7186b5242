"""The retrieval cost of one chat turn against the local SQLite engine.

One turn is one ``retrieve_memories(...)`` call with ``limit=6`` (the middleware default),
reading all five memory sources: long-term entities, graph expansion of the best entities,
the current conversation, the user's other conversations (cross-session) and the
conversation's reasoning steps. For each size (``--sizes 10000,100000``) the benchmark:

1. **builds a store** from the seeded workload (``benchmarks._workload``): messages in
   bulks of at most 100, entities one ``add_entity`` each, relationships between them (so
   graph expansion has edges to read) and a few reasoning steps per conversation (two in
   three with ``action_taken="direct response"``, the ones retrieval keeps). With ``--db``
   the build is kept and a later run with the same sizes, seed and embedder reuses it: a
   JSON sidecar ``<db>.turn.json`` records what was built, and a database without a
   matching sidecar is refused rather than silently measured.
2. **measures turns**: every turn asks a distinct query (``distinct_queries``, so the
   embedder's query cache can only help within a turn) against a random user's random
   conversation, through a proxy that counts and times every backend call by method and by
   memory source. After each turn it waits, untimed, for the turn's background work
   (extraction, message vectors) as the model call between two turns would, and reports
   that wait (``--back-to-back``: no wait, the next retrieval pays for it).
   Kinds of turn are interleaved in a seeded random order, so machine
   noise spreads over all of them:

   - ``native``: the engine's capabilities as they are (the first round of retrieval is
     one ``recall_turn`` call and the two writes one ``persist_turn``: ``SupportsTurns``);
   - ``per-source``: the same proxy with ``SupportsTurns`` hidden, so retrieval makes the
     provider's calls source by source (cross-session is one ``search_user_messages``)
     and the writes are two ``add_message`` calls: the path before ``recall_turn``;
   - ``per-conversation``: source by source with ``user_message_search`` hidden too, so
     cross-session takes the path the hosted API needs (``list_conversations`` then a
     search and a step list per other conversation: 1 + 2·N calls);
   - ``pre-embedded`` (diagnostic): a native turn whose timer also covers one
     ``embed_query`` of the fresh query made just before ``retrieve_memories``, so the
     concurrent searches all find the vector in the query cache: what a turn would cost if
     the query were embedded once per turn (see ``model runs`` in the table);
   - ``solo``: each source's backend calls run alone, one after another, with the query
     vector already cached, plus the bare ``embed_query`` of the fresh query: what each
     source costs without the others competing for the store's threads and the CPU.

The code is split by concern: ``options`` (the command line), ``build`` (what a size builds
and writing it to any backend), ``store`` (the kept database and its sidecar),
``instruments`` (the proxies that count and time), ``series`` (the per-turn samples and
their per-source breakdown), ``measure`` (the interleaved timing loop), ``http_backends``
(loopback ``nams-local serve`` and hosted NAMS), ``run`` (one size end to end),
``report`` (the table and the chart) and ``cli`` (``main``).
"""

from __future__ import annotations

from .cli import main

__all__ = ["main"]
