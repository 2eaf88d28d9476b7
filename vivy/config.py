"""Vivy's settings, read once from the environment at the entry point.

Every value has a default that runs the embedded setup (SQLite file, offline LLM provider when
no Gemini key is set). A value that cannot be used raises :class:`~vivy.errors.ConfigError`
naming the variable.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vivy.access import page_tokens
from vivy.errors import ConfigError
from vivy.shards import MAX_SHARDS, Shards, parse_shard_ids

__all__ = [
    "GEMINI_KEY_VARIABLES",
    "LLM_PROVIDERS",
    "LOG_LEVELS",
    "OPENAI_BASE_URL",
    "BufferSettings",
    "ProviderSettings",
    "Settings",
    "gemini_key_from_env",
    "inactivity_window",
    "is_loopback",
]


@dataclass(frozen=True, slots=True)
class BufferSettings:
    """Limits of channel buffers (inactivity, maximum age, messages)."""

    inactivity_min_s: float = 20 * 60.0
    inactivity_max_s: float = 30 * 60.0
    max_age_s: float = 2 * 3600.0
    cap: int = 100
    seed: int = 0


def inactivity_window(settings: BufferSettings, channel_id: int, first_message_id: int) -> float:
    """The inactivity window of one buffer, drawn from a generator seeded by ``settings.seed``.

    It is a pure function of the seed, the channel and the buffer's first message, so it is
    deterministic in tests and the same after a restart.
    """
    low, high = settings.inactivity_min_s, settings.inactivity_max_s
    if high <= low:
        return low
    digest = hashlib.blake2b(
        f"{settings.seed}:{channel_id}:{first_message_id}".encode(), digest_size=8
    ).digest()
    fraction = int.from_bytes(digest, "big") / 2**64
    return round(low + fraction * (high - low), 3)


#: Environment variables holding the Gemini API key, in order of precedence (a key of
#: its own for memory traffic comes first).
GEMINI_KEY_VARIABLES: tuple[str, ...] = ("MEMORY_GEMINI_TOKEN", "GEMINI_API_KEY")

#: Log levels ``VIVY_LOG_LEVEL`` accepts.
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warning", "error")

#: Largest value of a setting given in minutes or seconds: about 10 years, far beyond any
#: sensible window, and small enough that every deadline stays an exact float.
_MAX_MINUTES = 10 * 365 * 24 * 60.0
_MAX_SECONDS = _MAX_MINUTES * 60
#: Longest evidence retention, in days (a century).
_MAX_DAYS = 36500.0
#: Largest count setting (a buffer cap, a concurrency): beyond it memory, not sense, runs out.
_MAX_COUNT = 1_000_000
#: A whole number as the count settings accept it.
_WHOLE = re.compile(r"[+-]?[0-9]+")


def gemini_key_from_env(environ: Mapping[str, str]) -> str | None:
    """The Gemini API key from ``MEMORY_GEMINI_TOKEN``, else ``GEMINI_API_KEY``, else None."""
    for name in GEMINI_KEY_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


# --- LLM providers ------------------------------------------------------------------------

#: The providers ``VIVY_LLM_PROVIDER`` and ``VIVY_EMBEDDING_PROVIDER`` accept.
LLM_PROVIDERS: tuple[str, ...] = ("gemini", "openai", "offline")

#: OpenAI's own endpoint: the default of ``VIVY_OPENAI_BASE_URL``.
OPENAI_BASE_URL = "https://api.openai.com/v1"

#: The default chat model and embedding model on an OpenAI-compatible endpoint (OpenAI's).
OPENAI_FLASH_MODEL = "gpt-4o-mini"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"

#: Largest embedding dimension accepted (pgvector's limit for a ``vector`` column).
_MAX_DIMENSION = 16000


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """Which provider writes notes and chats, which one embeds, and how to reach an
    OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp, LM Studio, OpenAI, OpenRouter).

    ``generation`` and ``embeddings`` are names from :data:`LLM_PROVIDERS`, or None: the
    generation provider is then Gemini when its key is set, else offline, and the embedding
    provider follows the generation provider (see :attr:`Settings.llm_provider`).
    """

    generation: str | None = None
    embeddings: str | None = None
    openai_base_url: str = OPENAI_BASE_URL
    openai_api_key: str | None = field(default=None, repr=False)
    openai_flash_model: str = OPENAI_FLASH_MODEL
    openai_pro_model: str = OPENAI_FLASH_MODEL
    openai_embedding_model: str = OPENAI_EMBEDDING_MODEL
    openai_embedding_dimension: int = 768
    openai_timeout_s: float = 120.0
    #: A word put, with a space, before every stored document and every query embedded (some
    #: models expect one: nomic-embed-text ``search_document:`` and ``search_query:``).
    openai_document_prefix: str = ""
    openai_query_prefix: str = ""


@dataclass(frozen=True, slots=True)
class Settings:
    """All of Vivy's configuration.

    Built directly (tests, benchmarks) it takes any values; :meth:`from_env` is the one place
    that reads and validates the environment.
    """

    database: Path = Path("vivy.db")
    #: A PostgreSQL database (``VIVY_DB=postgresql://…``) used instead of ``database``.
    database_url: str | None = None
    buffers: BufferSettings = field(default_factory=BufferSettings)
    allowed_guilds: frozenset[int] | None = None
    blacklisted_users: frozenset[int] = frozenset()
    blacklisted_channels: frozenset[int] = frozenset()
    capture_enabled: bool = True
    retrieval_enabled: bool = True
    min_note_messages: int = 2
    profile_concurrency: int = 4
    profile_delay_s: float = 12 * 3600.0
    import_concurrency: int = 4
    timezone: str = "UTC"
    min_cluster_notes: int = 3
    catchup_time_limit_s: float = 300.0
    #: Messages read from a channel's Discord history when its guild becomes available (the
    #: ones sent while Vivy was not listening); 0 turns the catch-up off.
    catchup_messages: int = 5000
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    api_token: str | None = None
    #: Server managers' tokens for the memory page (``label=guild,guild:token ...``).
    page_tokens: str | None = None
    shutdown_grace_s: float = 10.0
    discord_token: str | None = None
    gemini_key: str | None = None
    gemini_flash_model: str = "gemini-2.0-flash"
    gemini_pro_model: str = "gemini-2.5-pro"
    gemini_embedding_model: str = "gemini-embedding-001"
    gemini_base_url: str | None = None
    discord_rest_url: str | None = None
    log_level: str | None = None
    #: Days a note keeps its messages as searchable evidence; None keeps them, 0 keeps none.
    evidence_days: float | None = None
    #: The score (0 to 1) a note needs to enter a reply's memory (the relevance gate); None
    #: is the threshold calibrated on the eval set.
    relevance_threshold: float | None = None
    #: Tokens of quoted evidence lines in a reply's memory, all notes together; None is the
    #: retriever's budget (:data:`vivy.retrieval.context.EVIDENCE_TOKENS`).
    evidence_tokens: int | None = None
    #: The gateway shards this process runs; None runs the count Discord recommends.
    shards: Shards | None = None
    #: Seconds a shard lease lasts unless renewed (a fleet on PostgreSQL); a process that
    #: dies is taken over after at most this long.
    lease_s: float = 15.0
    #: Seconds connecting to PostgreSQL, and any one statement there, may take.
    db_timeout_s: int = 30
    #: The LLM providers for generation and embeddings, and the OpenAI-compatible endpoint.
    providers: ProviderSettings = field(default_factory=ProviderSettings)

    @property
    def llm_provider(self) -> str:
        """The provider of notes, profiles, clusters and chat: as set, else Gemini when its
        key is set, else offline."""
        if self.providers.generation is not None:
            return self.providers.generation
        return "gemini" if self.gemini_key is not None else "offline"

    @property
    def embedding_provider(self) -> str:
        """The provider of embeddings: as set, else the generation provider."""
        return self.providers.embeddings or self.llm_provider

    @property
    def zone(self) -> ZoneInfo:
        """The IANA time zone of the midnight job."""
        return ZoneInfo(self.timezone)

    @property
    def target(self) -> Path | str:
        """The database ``VIVY_DB`` names: the PostgreSQL URL, else the SQLite file."""
        return self.database if self.database_url is None else self.database_url

    def with_target(self, database: Path | str) -> Settings:
        """These settings on ``database`` instead: a SQLite file's path, or a PostgreSQL
        connection string (a ``postgresql://`` URL or libpq's ``key=value`` form)."""
        if isinstance(database, str):
            return replace(self, database_url=database)
        return replace(self, database=database, database_url=None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from ``VIVY_*`` variables (and the Discord and Gemini keys).

        An empty variable means its default. A value that cannot be used raises
        :class:`~vivy.errors.ConfigError` naming the variable, the value and what is allowed.
        """
        reader = _Reader(environ)
        low = reader.number("VIVY_INACTIVITY_MIN_MINUTES", 20.0, low=0.0, strict=True)
        high = reader.number(
            "VIVY_INACTIVITY_MAX_MINUTES", 30.0, low=low, low_from="VIVY_INACTIVITY_MIN_MINUTES"
        )
        max_age = reader.number(
            "VIVY_MAX_BUFFER_MINUTES", 120.0, low=high, low_from="VIVY_INACTIVITY_MAX_MINUTES"
        )
        min_note = reader.count("VIVY_MIN_NOTE_MESSAGES", 2, low=1)
        buffers = BufferSettings(
            inactivity_min_s=low * 60,
            inactivity_max_s=high * 60,
            max_age_s=max_age * 60,
            cap=reader.count(
                "VIVY_BUFFER_CAP",
                100,
                low=max(2, min_note),
                low_from="VIVY_MIN_NOTE_MESSAGES" if min_note > 2 else "",
            ),
            seed=reader.count("VIVY_SEED", 0, low=0, high=2**63 - 1),
        )
        db = reader.text("VIVY_DB", "vivy.db")
        host = reader.text("VIVY_METRICS_HOST", "127.0.0.1")
        token = reader.text("VIVY_API_TOKEN", "") or None
        if not _is_host(host):
            raise ConfigError(
                f"VIVY_METRICS_HOST={host!r} is not a host name or an IP address: use an "
                "address such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
            )
        if token is None and not is_loopback(host):
            raise ConfigError(
                f"VIVY_METRICS_HOST={host!r} is not a loopback address, and the operator API "
                "there needs a bearer token: set VIVY_API_TOKEN, or use 127.0.0.1"
            )
        settings = cls(
            database=Path(db) if not is_postgres_url(db) else Path("vivy.db"),
            database_url=db if is_postgres_url(db) else None,
            buffers=buffers,
            allowed_guilds=reader.ids("VIVY_ALLOWED_GUILDS") or None,
            blacklisted_users=reader.ids("VIVY_BLACKLIST_USERS"),
            blacklisted_channels=reader.ids("VIVY_BLACKLIST_CHANNELS"),
            capture_enabled=reader.flag("VIVY_MEMORY_CAPTURE", True),
            retrieval_enabled=reader.flag("VIVY_MEMORY_RETRIEVAL", True),
            min_note_messages=min_note,
            profile_concurrency=reader.count("VIVY_PROFILE_CONCURRENCY", 4, low=1),
            profile_delay_s=reader.number("VIVY_PROFILE_DELAY_MINUTES", 720.0, low=0.0) * 60,
            import_concurrency=reader.count("VIVY_IMPORT_CONCURRENCY", 4, low=1),
            timezone=reader.text("VIVY_TIMEZONE", "UTC"),
            min_cluster_notes=reader.count("VIVY_MIN_CLUSTER_NOTES", 3, low=1),
            catchup_time_limit_s=reader.number(
                "VIVY_CATCHUP_SECONDS", 300.0, low=0.0, strict=True, high=_MAX_SECONDS
            ),
            catchup_messages=reader.count("VIVY_CATCHUP_MESSAGES", 5000, low=0),
            metrics_host=host,
            metrics_port=reader.count("VIVY_METRICS_PORT", 9464, low=1, high=65535),
            api_token=token,
            page_tokens=_page_tokens(token, reader.text("VIVY_PAGE_TOKENS", "") or None),
            shutdown_grace_s=reader.number(
                "VIVY_SHUTDOWN_GRACE_SECONDS", 10.0, low=0.0, high=_MAX_SECONDS
            ),
            discord_token=reader.text("DISCORD_TOKEN", "") or None,
            gemini_key=gemini_key_from_env(environ),
            gemini_flash_model=reader.text("VIVY_GEMINI_FLASH_MODEL", "gemini-2.0-flash"),
            gemini_pro_model=reader.text("VIVY_GEMINI_PRO_MODEL", "gemini-2.5-pro"),
            gemini_embedding_model=reader.text(
                "VIVY_GEMINI_EMBEDDING_MODEL", "gemini-embedding-001"
            ),
            gemini_base_url=reader.url(
                "GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"
            ),
            discord_rest_url=reader.url("VIVY_DISCORD_REST_URL", "https://discord.com/api/v10"),
            log_level=reader.choice("VIVY_LOG_LEVEL", LOG_LEVELS),
            evidence_days=(
                reader.number("VIVY_EVIDENCE_DAYS", -1.0, low=0.0, high=_MAX_DAYS)
                if reader.text("VIVY_EVIDENCE_DAYS", "")
                else None
            ),
            relevance_threshold=(
                reader.number("VIVY_RELEVANCE_THRESHOLD", 0.0, low=0.0, high=1.0)
                if reader.text("VIVY_RELEVANCE_THRESHOLD", "")
                else None
            ),
            evidence_tokens=(
                reader.count("VIVY_EVIDENCE_TOKENS", 0, low=0, high=100_000)
                if reader.text("VIVY_EVIDENCE_TOKENS", "")
                else None
            ),
            shards=_shards(reader, fleet=is_postgres_url(db)),
            lease_s=reader.number("VIVY_LEASE_SECONDS", 15.0, low=3.0, high=3600.0),
            db_timeout_s=reader.count("VIVY_DB_TIMEOUT_SECONDS", 30, low=1, high=3600),
            providers=_providers(reader, gemini_key=gemini_key_from_env(environ)),
        )
        try:
            settings.zone  # noqa: B018 - validates the zone name
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ConfigError(
                f"VIVY_TIMEZONE={settings.timezone!r} is not a known IANA time zone "
                "(for example Europe/Berlin or UTC)"
            ) from exc
        return settings


def _shards(reader: _Reader, *, fleet: bool) -> Shards | None:
    """``VIVY_SHARD_IDS`` of ``VIVY_SHARD_COUNT``; on SQLite (not a ``fleet``) one process
    runs them all."""
    ids = reader.text("VIVY_SHARD_IDS", "")
    if not reader.text("VIVY_SHARD_COUNT", ""):
        if ids:
            raise ConfigError(
                f"VIVY_SHARD_IDS={ids!r} needs VIVY_SHARD_COUNT, the bot's total number of shards"
            )
        return None
    count = reader.count("VIVY_SHARD_COUNT", 1, low=1, high=MAX_SHARDS)
    try:
        shards = parse_shard_ids(ids or f"0-{count - 1}", count)
    except ValueError as exc:
        raise ConfigError(f"VIVY_SHARD_IDS={ids!r} is not allowed: {exc}") from None
    if not shards.complete and not fleet:
        raise ConfigError(
            f"VIVY_SHARD_IDS={ids!r} runs {len(shards.ids)} of {count} shards, but a SQLite "
            "database has one process, which runs them all: leave VIVY_SHARD_IDS empty, or "
            "share a PostgreSQL database (VIVY_DB=postgresql://...) between the processes"
        )
    return shards


def _providers(reader: _Reader, *, gemini_key: str | None) -> ProviderSettings:
    """The ``VIVY_LLM_PROVIDER`` / ``VIVY_EMBEDDING_PROVIDER`` choice and the
    ``VIVY_OPENAI_*`` endpoint settings, checked together: a provider named without what it
    needs, or endpoint settings that no provider uses, is refused in one line."""
    generation = reader.choice("VIVY_LLM_PROVIDER", LLM_PROVIDERS)
    embeddings = reader.choice("VIVY_EMBEDDING_PROVIDER", LLM_PROVIDERS)
    flash = reader.text("VIVY_OPENAI_FLASH_MODEL", OPENAI_FLASH_MODEL)
    settings = ProviderSettings(
        generation=generation,
        embeddings=embeddings,
        openai_base_url=reader.text("VIVY_OPENAI_BASE_URL", OPENAI_BASE_URL).rstrip("/"),
        openai_api_key=reader.text("VIVY_OPENAI_API_KEY", "") or None,
        openai_flash_model=flash,
        openai_pro_model=reader.text("VIVY_OPENAI_PRO_MODEL", flash),
        openai_embedding_model=reader.text("VIVY_OPENAI_EMBEDDING_MODEL", OPENAI_EMBEDDING_MODEL),
        openai_embedding_dimension=reader.count(
            "VIVY_OPENAI_EMBEDDING_DIMENSION", 768, low=1, high=_MAX_DIMENSION
        ),
        openai_timeout_s=reader.number(
            "VIVY_OPENAI_TIMEOUT_SECONDS", 120.0, low=0.0, strict=True, high=3600.0
        ),
        openai_document_prefix=reader.text("VIVY_OPENAI_DOCUMENT_PREFIX", ""),
        openai_query_prefix=reader.text("VIVY_OPENAI_QUERY_PREFIX", ""),
    )
    chosen = {generation or ("gemini" if gemini_key else "offline"), embeddings}
    if "gemini" in chosen and gemini_key is None:
        which = "VIVY_LLM_PROVIDER" if generation == "gemini" else "VIVY_EMBEDDING_PROVIDER"
        raise ConfigError(
            f"{which}=gemini needs a Gemini API key: set GEMINI_API_KEY (or "
            "MEMORY_GEMINI_TOKEN), or choose openai or offline"
        )
    if "openai" not in chosen:
        stray = [name for name in _OPENAI_VARIABLES if reader.text(name, "")]
        if stray:
            raise ConfigError(
                f"{stray[0]} is set but no provider uses it: set VIVY_LLM_PROVIDER=openai "
                "(or VIVY_EMBEDDING_PROVIDER=openai for embeddings alone), or unset it"
            )
        return settings
    url = settings.openai_base_url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"VIVY_OPENAI_BASE_URL={url!r} is not an http(s) URL: expected for example "
            "http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1"
        )
    if url == OPENAI_BASE_URL and settings.openai_api_key is None:
        raise ConfigError(
            f"VIVY_OPENAI_API_KEY is not set and OpenAI ({OPENAI_BASE_URL}) needs one: set "
            "it, or point VIVY_OPENAI_BASE_URL at your own server (Ollama: "
            "http://127.0.0.1:11434/v1)"
        )
    return settings


#: The settings of the OpenAI-compatible endpoint, refused when no provider is ``openai``.
_OPENAI_VARIABLES: tuple[str, ...] = (
    "VIVY_OPENAI_BASE_URL",
    "VIVY_OPENAI_API_KEY",
    "VIVY_OPENAI_FLASH_MODEL",
    "VIVY_OPENAI_PRO_MODEL",
    "VIVY_OPENAI_EMBEDDING_MODEL",
    "VIVY_OPENAI_EMBEDDING_DIMENSION",
    "VIVY_OPENAI_TIMEOUT_SECONDS",
    "VIVY_OPENAI_DOCUMENT_PREFIX",
    "VIVY_OPENAI_QUERY_PREFIX",
)


def is_postgres_url(value: str) -> bool:
    """Whether ``VIVY_DB`` names a PostgreSQL database rather than a SQLite file."""
    return value.startswith(("postgresql://", "postgres://"))


def shown_database(settings: Settings) -> str:
    """The database as a report may name it: a file's path, or a URL without its password."""
    url = settings.database_url
    if url is None:
        return str(settings.database)
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rsplit('@', 1)[-1]}"


def _page_tokens(api_token: str | None, entries: str | None) -> str | None:
    """``VIVY_PAGE_TOKENS`` once its entries are checked (ConfigError naming a bad one)."""
    page_tokens(api_token, entries)
    return entries


def _is_host(host: str) -> bool:
    """Whether ``host`` could name a host: an IP address, or a name of letters, digits,
    hyphens and dots."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        labels = host.removesuffix(".").split(".")
        return bool(host) and all(
            label and label.isascii() and label.replace("-", "").isalnum() for label in labels
        )


def is_loopback(host: str) -> bool:
    """Whether ``host`` names a loopback address (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Reader:
    """Parses typed values out of the environment with errors that name the variable.

    Every error says ``NAME=value`` and what is allowed, so the operator can fix it from the
    message alone; an empty or blank value always means the default.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ

    def _raw(self, name: str) -> str | None:
        raw = self._environ.get(name, "").strip()
        return raw or None

    def text(self, name: str, default: str) -> str:
        """A string setting, stripped; the default when unset or blank."""
        return self._raw(name) or default

    def number(
        self,
        name: str,
        default: float,
        *,
        low: float,
        strict: bool = False,
        high: float = _MAX_MINUTES,
        low_from: str = "",
    ) -> float:
        """A finite number from ``low`` (excluded when ``strict``) to ``high``.

        ``low_from`` names the setting the lower bound comes from, for the error message.
        """
        raw = self._raw(name)
        if raw is None:
            return float(default)
        bound = f"above {low:g}" if strict else f"of at least {low:g}"
        if low_from:
            bound += f" ({low_from})"
        allowed = f"expected a finite number {bound} and at most {high:.0f}"
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a number: {allowed}") from None
        if not math.isfinite(value) or value < low or (strict and value == low) or value > high:
            raise ConfigError(f"{name}={raw!r} is out of range: {allowed}")
        return value

    def count(
        self, name: str, default: int, *, low: int, high: int = _MAX_COUNT, low_from: str = ""
    ) -> int:
        """A whole number from ``low`` to ``high`` (no fraction, no exponent)."""
        raw = self._raw(name)
        if raw is None:
            return default
        allowed = (
            f"expected a whole number from {low}{f' ({low_from})' if low_from else ''} to {high}"
        )
        if _WHOLE.fullmatch(raw) is None:
            raise ConfigError(f"{name}={raw!r} is not a whole number: {allowed}")
        value = int(raw)
        if not low <= value <= high:
            raise ConfigError(f"{name}={raw!r} is out of range: {allowed}")
        return value

    def url(self, name: str, example: str) -> str | None:
        """An ``http://`` or ``https://`` URL with a host, or None when unset."""
        raw = self._raw(name)
        if raw is None:
            return None
        try:
            parts = urlsplit(raw)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
        except ValueError:  # a malformed port or IPv6 address
            valid = False
        if not valid:
            raise ConfigError(
                f"{name}={raw!r} is not a URL: expected http:// or https:// and a host, "
                f"for example {example}"
            )
        return raw

    def choice(self, name: str, choices: tuple[str, ...]) -> str | None:
        """One of ``choices`` (case-insensitive), or None when unset."""
        raw = self._raw(name)
        if raw is None:
            return None
        if raw.lower() not in choices:
            raise ConfigError(
                f"{name}={raw!r} is not allowed: expected one of {', '.join(choices)}"
            )
        return raw.lower()

    def flag(self, name: str, default: bool) -> bool:
        """A boolean: 1/true/yes/on or 0/false/no/off."""
        raw = (self._raw(name) or "").lower()
        if raw == "":
            return default
        if raw in {"1", "true", "yes", "on"}:
            return True
        if raw in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"{name}={raw!r} is not allowed: expected true or false")

    def ids(self, name: str) -> frozenset[int]:
        """Comma-separated Discord ids (snowflakes)."""
        raw = self._environ.get(name, "")
        parts = [part.strip() for part in raw.replace(";", ",").split(",") if part.strip()]
        if not all(p.isascii() and p.isdigit() and 0 < int(p) < 2**63 for p in parts):
            raise ConfigError(
                f"{name}={raw!r} is not allowed: expected comma-separated Discord ids"
            )
        return frozenset(int(part) for part in parts)
