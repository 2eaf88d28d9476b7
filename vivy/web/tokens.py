"""Who may read the operator API and the memory page, and which guilds each may see.

``VIVY_API_TOKEN`` is the operator's token, labelled ``operator``, for every guild the
process serves. ``VIVY_PAGE_TOKENS`` adds server managers' tokens, one entry each, separated
by spaces: ``label=guild,guild:token`` (or ``label=*:token`` for every guild). A request
names its token in an ``Authorization: Bearer`` header, never in a URL; the label is what the
corrections log records as who made a correction.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass

from vivy.errors import ConfigError

__all__ = ["MIN_TOKEN_CHARS", "OPERATOR_LABEL", "Access", "Tokens"]

#: The label of ``VIVY_API_TOKEN``.
OPERATOR_LABEL = "operator"
#: Shortest page token accepted: shorter ones are guessable.
MIN_TOKEN_CHARS = 16

_ENTRY = re.compile(r"^([A-Za-z0-9_.-]{1,40})=(\*|[0-9]+(?:,[0-9]+)*):(\S+)$")


@dataclass(frozen=True, slots=True)
class Access:
    """What one token may do: its label and its guilds (None: every guild served)."""

    label: str
    guilds: frozenset[int] | None

    def sees(self, guild_id: int) -> bool:
        """Whether this token may read and correct the guild's memory."""
        return self.guilds is None or guild_id in self.guilds


class Tokens:
    """The configured tokens; :meth:`access` finds the one a request's header names."""

    def __init__(self, entries: Iterable[tuple[str, Access]] = ()) -> None:
        self._entries = [(secret.encode(), access) for secret, access in entries]

    @classmethod
    def from_settings(cls, api_token: str | None, page_tokens: str | None) -> Tokens:
        """The operator's token and the managers' tokens; raises ConfigError naming a bad
        ``VIVY_PAGE_TOKENS`` entry (by position, never by its secret)."""
        entries: list[tuple[str, Access]] = []
        if api_token:
            entries.append((api_token, Access(OPERATOR_LABEL, None)))
        for position, entry in enumerate((page_tokens or "").split(), start=1):
            match = _ENTRY.match(entry)
            if match is None:
                raise ConfigError(
                    f"VIVY_PAGE_TOKENS entry {position} is not label=guild,guild:token "
                    "(or label=*:token)"
                )
            label, guilds, secret = match.groups()
            if len(secret) < MIN_TOKEN_CHARS:
                raise ConfigError(
                    f"VIVY_PAGE_TOKENS entry {position} ({label}): the token is shorter than "
                    f"{MIN_TOKEN_CHARS} characters"
                )
            scope = None if guilds == "*" else frozenset(int(g) for g in guilds.split(","))
            entries.append((secret, Access(label, scope)))
        secrets = [secret for secret, _ in entries]
        if len(set(secrets)) != len(secrets):
            raise ConfigError("VIVY_PAGE_TOKENS gives the same token twice")
        return cls(entries)

    @property
    def required(self) -> bool:
        """Whether any token is configured (else, on loopback, everything is open)."""
        return bool(self._entries)

    def access(self, authorization: str) -> Access | None:
        """The access of the token in an ``Authorization`` header value, or None."""
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        given = credentials.strip().encode()
        found = None
        for secret, access in self._entries:  # compare with every one: no timing hint
            if hmac.compare_digest(given, secret):
                found = access
        return found
