"""200 everyday chat lines about nothing in particular (no places, no homes).

Distractors for retrieval tests: a memory about where the user lives must be findable
among them by meaning alone.
"""

from __future__ import annotations

_TEMPLATES = [
    "Can you recommend a good {} for tonight?",
    "I just finished reading a book about {}.",
    "My favourite snack while working is {}.",
    "Remind me to buy {} tomorrow morning.",
    "What is the best way to learn {} quickly?",
    "I spent the whole afternoon fixing {}.",
    "Do you think {} is worth the money?",
    "Yesterday we argued for an hour about {}.",
    "Please summarise the article on {} for me.",
    "I keep forgetting the rules of {}.",
    "Our team meeting ran long because of {}.",
    "How many calories are in a bowl of {}?",
    "The podcast episode about {} was surprisingly funny.",
    "Could you write a short poem about {}?",
    "I need a quick recipe that uses {}.",
    "My laptop slowed down after installing {}.",
    "What time does the {} match start?",
    "I'm thinking of taking a course on {}.",
    "The kids won't stop talking about {}.",
    "Give me three fun facts about {}.",
]
_FILLERS = [
    "thriller movies",
    "chess openings",
    "roasted almonds",
    "sourdough bread",
    "quantum computing",
    "the printer driver",
    "noise cancelling headphones",
    "board games",
    "basketball",
    "spreadsheet formulas",
]

UNRELATED_CHAT: list[str] = [t.format(f) for t in _TEMPLATES for f in _FILLERS]
assert len(UNRELATED_CHAT) == 200
