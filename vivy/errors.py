"""Vivy's exception hierarchy: every error Vivy raises derives from :class:`VivyError`.

Third-party exceptions (SQLite, google-genai, hikari) are translated into these types where
they enter Vivy, so callers handle one family of errors.
"""

from __future__ import annotations

__all__ = [
    "AppStopped",
    "ConfigError",
    "DatabaseUnavailable",
    "EndpointUnreachable",
    "IllegalTransition",
    "LLMError",
    "LLMInvalidOutput",
    "LLMUnavailable",
    "LeaseLost",
    "SchemaTooNew",
    "StorageError",
    "VivyError",
]


class VivyError(Exception):
    """Root of every error raised by Vivy."""


class ConfigError(VivyError):
    """The configuration is missing a value or holds one that cannot be used."""


class EndpointUnreachable(ConfigError):
    """A configured LLM endpoint did not answer when it was checked before work started."""


class StorageError(VivyError):
    """The database could not be opened, migrated or written."""


class DatabaseUnavailable(StorageError):
    """The database refused or dropped the connection, or did not answer in time (a restart,
    a failover, a partition): the same call may succeed later, so callers wait and retry."""


class SchemaTooNew(StorageError):
    """The database was written by a newer Vivy than this one.

    Attributes:
        found: the schema version recorded in the database.
        supported: the newest schema version this Vivy knows.
    """

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(
            f"database schema version {found} is newer than this Vivy supports ({supported}); "
            "upgrade Vivy or restore a backup made by this version"
        )
        self.found = found
        self.supported = supported


class AppStopped(VivyError):
    """The app stopped (a graceful stop, a lease lost or fenced) before it stored an event
    handed to it; a catch-up from Discord's history recovers a message not stored."""


class LeaseLost(VivyError):
    """This process no longer owns a shard it was writing for: another process took its
    lease over (after this one paused past the lease's expiry), so it must stop writing."""


class IllegalTransition(VivyError):
    """A state machine received an event that its current state does not accept.

    Attributes:
        state: name of the state the machine was in (unchanged by the failed call).
        event: name of the event type that was refused.
    """

    def __init__(self, machine: str, state: str, event: str) -> None:
        super().__init__(f"{machine}: event {event} is not allowed in state {state}")
        self.machine = machine
        self.state = state
        self.event = event


class LLMError(VivyError):
    """An LLM call failed; the work item that needed it stays pending."""


class LLMUnavailable(LLMError):
    """The LLM service could not be reached or kept failing (timeouts, 408/429/5xx)."""


class LLMInvalidOutput(LLMError):
    """The LLM answered, but the answer was blocked, empty, unparsable or failed its schema."""
