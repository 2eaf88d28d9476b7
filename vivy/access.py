"""Who may read the operator API and the memory page, and which guilds each may see.

``VIVY_API_TOKEN`` is the operator's token, labelled ``operator``, for every guild the
process serves. ``VIVY_PAGE_TOKENS`` adds server managers' tokens, one entry each, separated
by spaces: ``label=guild,guild:token`` (or ``label=*:token`` for every guild). The
configuration checks the entries with :func:`page_tokens` when it reads them, and the web
server matches requests against them (:class:`vivy.web.tokens.Tokens`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vivy.errors import ConfigError

__all__ = ["MIN_TOKEN_CHARS", "OPERATOR_LABEL", "Access", "page_tokens"]

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


def page_tokens(api_token: str | None, entries: str | None) -> list[tuple[str, Access]]:
    """Each token's secret and access: the operator's (``VIVY_API_TOKEN``), then the
    managers' (``VIVY_PAGE_TOKENS``); raises ConfigError naming a bad entry by its position,
    never by its secret."""
    found: list[tuple[str, Access]] = []
    if api_token:
        found.append((api_token, Access(OPERATOR_LABEL, None)))
    for position, entry in enumerate((entries or "").split(), start=1):
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
        found.append((secret, Access(label, scope)))
    secrets = [secret for secret, _ in found]
    if len(set(secrets)) != len(secrets):
        raise ConfigError("VIVY_PAGE_TOKENS gives the same token twice")
    return found
