"""Who may read the operator API and the memory page, and which guilds each may see.

``VIVY_API_TOKEN`` is the operator's token, labelled ``operator``, for every guild the
process serves. ``VIVY_PAGE_TOKENS`` adds server managers' tokens, one entry each, separated
by spaces: ``label=guild,guild:token`` (or ``label=*:token`` for every guild). A request
names its token in an ``Authorization: Bearer`` header, never in a URL; the label is what the
corrections log records as who made a correction.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from vivy.access import MIN_TOKEN_CHARS, OPERATOR_LABEL, Access
from vivy.access import page_tokens as token_entries

__all__ = ["MIN_TOKEN_CHARS", "OPERATOR_LABEL", "Access", "Tokens"]


class Tokens:
    """The configured tokens; :meth:`access` finds the one a request's header names."""

    def __init__(self, entries: Iterable[tuple[str, Access]] = ()) -> None:
        self._entries = [(secret.encode(), access) for secret, access in entries]

    @classmethod
    def from_settings(cls, api_token: str | None, page_tokens: str | None) -> Tokens:
        """The operator's token and the managers' tokens; raises ConfigError naming a bad
        ``VIVY_PAGE_TOKENS`` entry (by position, never by its secret)."""
        return cls(token_entries(api_token, page_tokens))

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
