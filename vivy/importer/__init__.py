"""Importing DiscordChatExporter exports: strict validation first, then a replay of history.

An import has two phases, and nothing is written until the first has passed:

1. :func:`load_exports` (:mod:`vivy.importer.export`) reads and checks every file
   completely. A file holds one export object (``guild``, ``channel``, ``messages``) or a
   JSON array of them. Any defect (a truncated file, a wrong type, a missing field, a
   timestamp that is not ISO-8601 with an offset) raises :class:`ImportFormatError` naming
   the file, the message and the field, and the database is not even opened.
2. :func:`replay` (:mod:`vivy.importer.replay`) feeds the messages of all files, merged in
   timestamp order, through the same pipeline as live traffic on trio's ``MockClock``, lets
   the pipeline finish every note and profile update, then runs the nightly job
   (:mod:`vivy.importer.nightly`) for each local day the import covered that has no
   completed run, on a clock that reads that day's closing midnight.

The results do not depend on model latency or on how many calls were in flight: a note is
stamped with its conversation's close time and committed in close order, a profile update
coalesces exactly the notes that closed before it came due and is stamped with its due time
(see :mod:`vivy.actors.frontier`), so the same export and the same deterministic model give
the same rows run after run. Every step is durable and every message already fed is
skipped, so an interrupted import is finished by running it again.

Exports hold final content, so edits are already applied; message types other than
``Default`` and ``Reply`` (pins, joins, thread starts) are skipped. Mentioned ids come from
``mentions``, never from the content. A network LLM must be wrapped in
:class:`RealTimeLLM` (:mod:`vivy.llm.bridge`): under the mock clock its time-outs would
otherwise expire in virtual time the moment every task waits on the network.
"""

from __future__ import annotations

from vivy.importer.export import (
    ACCEPTED_TYPES,
    ExportBatch,
    ExportMessage,
    ImportFormatError,
    load_exports,
    parse_export,
)
from vivy.importer.replay import (
    BACKLOG_PER_SLOT,
    MAX_FAILED_ATTEMPTS,
    STALL_LIMIT_S,
    ImportProgress,
    ImportReport,
    import_exports,
    replay,
)
from vivy.llm.bridge import RealTimeLLM

__all__ = [
    "ACCEPTED_TYPES",
    "BACKLOG_PER_SLOT",
    "MAX_FAILED_ATTEMPTS",
    "STALL_LIMIT_S",
    "ExportBatch",
    "ExportMessage",
    "ImportFormatError",
    "ImportProgress",
    "ImportReport",
    "RealTimeLLM",
    "import_exports",
    "load_exports",
    "parse_export",
    "replay",
]
