"""The offline provider: the LLM port without a key or a network.

It keeps Vivy useful when no Gemini key is set (graceful degradation) and gives
the demo and the tests a deterministic LLM. Everything but the embeddings is plain text
statistics and rules:

* notes are extracts: salient noun phrases for the title and topics (names first; verbs,
  adverbs and chat noise never make a topic), who talked plus a few representative quoted
  lines for the summary, capitalised names for entities, "let's"/"we'll"/"decided" lines
  for decisions and lines ending in "?" for open questions; lines that read as instructions
  to the bot are left out of all of it;
* profile operations come from first-person statements by the user ("I live in Austin" adds
  "Lives in Austin"; "I moved to Denver last month" invalidates it with "Lives in Denver"),
  in a profile-update call or, for the members a note call lists, in the note's answer;
* consolidation merges near-duplicate facts and retires superseded ones;
* topic clusters group notes that share salient terms;
* embeddings come from a sentence-embedding model (all-MiniLM-L6-v2, run with numpy)
  shipped inside Vivy's own wheel (:mod:`.embeddings`), loaded with no network.

Its output is labelled: ``quality`` is ``"offline"`` and note summaries start with
``(offline extract)``, so nobody mistakes an extract for a model's summary. It reads the
structured ``payload`` of each request and never parses prompt text.

The package is split by concern, one room each: :mod:`.text` (shared words, sentences
and markup), :mod:`.words` (word classes), :mod:`.phrases` (salient phrases and names),
:mod:`.notes`, :mod:`.facts` (statements read into facts), :mod:`.profiles` (profile
operations), :mod:`.clusters`, :mod:`.embeddings`, :mod:`.chat` and :mod:`.provider`
(:class:`OfflineLLM`, which answers the port from them).
"""

from __future__ import annotations

from vivy.llm.offline.chat import offline_chat_answer
from vivy.llm.offline.clusters import cluster_notes
from vivy.llm.offline.embeddings import (
    LOCAL_EMBEDDING_DIMENSION,
    LOCAL_EMBEDDING_MODEL,
    Embedder,
    LocalEmbedder,
)
from vivy.llm.offline.notes import write_note
from vivy.llm.offline.profiles import (
    consolidate_profile,
    conversation_operations,
    profile_operations,
)
from vivy.llm.offline.provider import (
    OFFLINE_EMBEDDING_MODEL,
    OFFLINE_MODEL,
    OFFLINE_QUALITY,
    OfflineLLM,
    shared_embedder,
)

__all__ = [
    "LOCAL_EMBEDDING_DIMENSION",
    "LOCAL_EMBEDDING_MODEL",
    "OFFLINE_EMBEDDING_MODEL",
    "OFFLINE_MODEL",
    "OFFLINE_QUALITY",
    "Embedder",
    "LocalEmbedder",
    "OfflineLLM",
    "cluster_notes",
    "consolidate_profile",
    "conversation_operations",
    "offline_chat_answer",
    "profile_operations",
    "shared_embedder",
    "write_note",
]
