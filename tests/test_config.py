"""Settings are read and checked in one place: finite, whole where counted, bounded, and an
empty variable means the default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vivy.config import Settings, shown_database
from vivy.errors import ConfigError
from vivy.llm import gemini_config
from vivy.retrieval.context import EVIDENCE_TOKENS
from vivy.retrieval.ranking import Gate
from vivy.retrieval.settings import RetrievalSettings

#: Every variable :meth:`Settings.from_env` reads.
VARIABLES = (
    "VIVY_DB_TIMEOUT_SECONDS",
    "VIVY_IMPORT_CONCURRENCY",
    "VIVY_LEASE_SECONDS",
    "VIVY_SHARD_COUNT",
    "VIVY_SHARD_IDS",
    "VIVY_DB",
    "VIVY_ALLOWED_GUILDS",
    "VIVY_BLACKLIST_USERS",
    "VIVY_BLACKLIST_CHANNELS",
    "VIVY_MEMORY_CAPTURE",
    "VIVY_MEMORY_RETRIEVAL",
    "VIVY_INACTIVITY_MIN_MINUTES",
    "VIVY_INACTIVITY_MAX_MINUTES",
    "VIVY_MAX_BUFFER_MINUTES",
    "VIVY_BUFFER_CAP",
    "VIVY_SEED",
    "VIVY_MIN_NOTE_MESSAGES",
    "VIVY_PROFILE_CONCURRENCY",
    "VIVY_PROFILE_DELAY_MINUTES",
    "VIVY_TIMEZONE",
    "VIVY_MIN_CLUSTER_NOTES",
    "VIVY_CATCHUP_SECONDS",
    "VIVY_CATCHUP_MESSAGES",
    "VIVY_METRICS_HOST",
    "VIVY_METRICS_PORT",
    "VIVY_API_TOKEN",
    "VIVY_PAGE_TOKENS",
    "VIVY_SHUTDOWN_GRACE_SECONDS",
    "VIVY_LOG_LEVEL",
    "VIVY_DISCORD_REST_URL",
    "DISCORD_TOKEN",
    "MEMORY_GEMINI_TOKEN",
    "GEMINI_API_KEY",
    "VIVY_GEMINI_FLASH_MODEL",
    "VIVY_GEMINI_PRO_MODEL",
    "VIVY_GEMINI_EMBEDDING_MODEL",
    "GOOGLE_GEMINI_BASE_URL",
    "VIVY_EVIDENCE_DAYS",
    "VIVY_RELEVANCE_THRESHOLD",
    "VIVY_EVIDENCE_TOKENS",
    "VIVY_LLM_PROVIDER",
    "VIVY_EMBEDDING_PROVIDER",
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

CONFIGURATION = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text(
    encoding="utf-8"
)


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_variable_means_the_default(blank: str) -> None:
    """Every setting left empty (or blank) gives the same settings as leaving it unset."""
    assert Settings.from_env(dict.fromkeys(VARIABLES, blank)) == Settings.from_env({})


class _Asked(dict[str, str]):
    """An empty environment that notes every variable asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        """Note ``key``; it is never set."""
        self.asked.add(key)
        return default

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return False


def read_variables() -> set[str]:
    """Every variable ``Settings.from_env`` reads, as it reads them."""
    environ = _Asked()
    Settings.from_env(environ)
    return environ.asked


def test_the_list_of_variables_is_what_settings_read() -> None:
    """The variables tested here are exactly the ones Settings reads."""
    assert read_variables() == set(VARIABLES)


@pytest.mark.parametrize("name", sorted(read_variables()))
def test_every_setting_is_in_the_configuration_table(name: str) -> None:
    """docs/configuration.md's settings table documents every variable Settings reads."""
    first_cells = [
        row.split(" | ")[0] for row in CONFIGURATION.splitlines() if row.startswith("| `")
    ]
    assert any(f"`{name}`" in cell for cell in first_cells)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"VIVY_BUFFER_CAP": "inf"}, "VIVY_BUFFER_CAP='inf'"),
        ({"VIVY_BUFFER_CAP": "2.7"}, "VIVY_BUFFER_CAP='2.7'"),
        ({"VIVY_BUFFER_CAP": "1e3"}, "VIVY_BUFFER_CAP='1e3'"),
        ({"VIVY_BUFFER_CAP": "1"}, "from 2 to"),
        ({"VIVY_BUFFER_CAP": "4", "VIVY_MIN_NOTE_MESSAGES": "5"}, "VIVY_MIN_NOTE_MESSAGES"),
        ({"VIVY_METRICS_PORT": "nan"}, "VIVY_METRICS_PORT='nan'"),
        ({"VIVY_METRICS_PORT": "0"}, "from 1 to 65535"),
        ({"VIVY_METRICS_PORT": "65536"}, "from 1 to 65535"),
        ({"VIVY_INACTIVITY_MIN_MINUTES": "nan"}, "VIVY_INACTIVITY_MIN_MINUTES='nan'"),
        ({"VIVY_INACTIVITY_MIN_MINUTES": "0"}, "above 0"),
        ({"VIVY_INACTIVITY_MIN_MINUTES": "-inf"}, "VIVY_INACTIVITY_MIN_MINUTES"),
        ({"VIVY_INACTIVITY_MAX_MINUTES": "19"}, "VIVY_INACTIVITY_MIN_MINUTES"),
        ({"VIVY_MAX_BUFFER_MINUTES": "0"}, "VIVY_MAX_BUFFER_MINUTES='0'"),
        ({"VIVY_MAX_BUFFER_MINUTES": "29"}, "VIVY_INACTIVITY_MAX_MINUTES"),
        ({"VIVY_PROFILE_DELAY_MINUTES": "inf"}, "VIVY_PROFILE_DELAY_MINUTES"),
        ({"VIVY_CATCHUP_SECONDS": "0"}, "VIVY_CATCHUP_SECONDS"),
        ({"VIVY_CATCHUP_MESSAGES": "-1"}, "VIVY_CATCHUP_MESSAGES='-1'"),
        ({"VIVY_SHUTDOWN_GRACE_SECONDS": "-1"}, "VIVY_SHUTDOWN_GRACE_SECONDS"),
        ({"VIVY_SEED": "-1"}, "VIVY_SEED"),
        ({"VIVY_PROFILE_CONCURRENCY": "0"}, "VIVY_PROFILE_CONCURRENCY"),
        ({"VIVY_MIN_CLUSTER_NOTES": "2.5"}, "VIVY_MIN_CLUSTER_NOTES"),
        ({"VIVY_TIMEZONE": "Mars/Olympus"}, "VIVY_TIMEZONE='Mars/Olympus'"),
        ({"VIVY_MEMORY_RETRIEVAL": "maybe"}, "VIVY_MEMORY_RETRIEVAL"),
        ({"VIVY_BLACKLIST_USERS": "1,two"}, "VIVY_BLACKLIST_USERS"),
        ({"VIVY_ALLOWED_GUILDS": "99999999999999999999999"}, "VIVY_ALLOWED_GUILDS"),
        ({"VIVY_LOG_LEVEL": "loud"}, "VIVY_LOG_LEVEL='loud'"),
        ({"VIVY_METRICS_HOST": "0.0.0.0"}, "VIVY_API_TOKEN"),
        ({"VIVY_DISCORD_REST_URL": "not a url"}, "VIVY_DISCORD_REST_URL='not a url'"),
        ({"VIVY_DISCORD_REST_URL": "ftp://discord.example/api"}, "VIVY_DISCORD_REST_URL"),
        ({"VIVY_DISCORD_REST_URL": "http:///api/v10"}, "VIVY_DISCORD_REST_URL"),
        ({"GOOGLE_GEMINI_BASE_URL": "localhost:8080"}, "GOOGLE_GEMINI_BASE_URL"),
    ],
)
def test_an_unusable_value_is_refused_by_name(env: dict[str, str], named: str) -> None:
    """A refused value raises ConfigError naming the variable (and value, and what is allowed)."""
    with pytest.raises(ConfigError, match=r"expected|set VIVY_API_TOKEN|IANA|not a URL") as caught:
        Settings.from_env(env)
    assert named in str(caught.value)


def test_values_in_range_are_read_as_their_types() -> None:
    """Counts become ints, minutes become seconds, the non-loopback host passes with a token."""
    settings = Settings.from_env(
        {
            "VIVY_BUFFER_CAP": " 50 ",
            "VIVY_MAX_BUFFER_MINUTES": "30",
            "VIVY_SEED": "7",
            "VIVY_METRICS_HOST": "0.0.0.0",
            "VIVY_API_TOKEN": "t",
            "VIVY_LOG_LEVEL": "DEBUG",
        }
    )
    assert (settings.buffers.cap, settings.buffers.max_age_s, settings.buffers.seed) == (
        50,
        1800,
        7,
    )
    assert (settings.metrics_host, settings.api_token, settings.log_level) == (
        "0.0.0.0",
        "t",
        "debug",
    )


def test_the_gemini_settings_are_read_once_into_settings() -> None:
    """The key, model names and endpoint come from Settings; gemini_config uses them."""
    settings = Settings.from_env(
        {
            "GEMINI_API_KEY": "k2",
            "MEMORY_GEMINI_TOKEN": "k1",
            "VIVY_GEMINI_PRO_MODEL": "pro-x",
            "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:1",
        }
    )
    assert settings.gemini_key == "k1"
    config = gemini_config(settings)
    assert config is not None
    assert (config.api_key, config.pro_model, config.base_url) == (
        "k1",
        "pro-x",
        "http://127.0.0.1:1",
    )
    assert config.flash_model == settings.gemini_flash_model == "gemini-2.0-flash"
    assert gemini_config(Settings.from_env({})) is None


def test_recall_settings_reach_the_retriever() -> None:
    """Evidence retention, the relevance threshold and the quote budget shape retrieval."""
    default = RetrievalSettings.of(Settings.from_env({}))
    assert default.evidence and default.gate.min_relevance == Gate().min_relevance
    assert default.evidence_tokens == EVIDENCE_TOKENS
    chosen = Settings.from_env(
        {
            "VIVY_EVIDENCE_DAYS": "0",
            "VIVY_RELEVANCE_THRESHOLD": "0.2",
            "VIVY_EVIDENCE_TOKENS": "50",
            "VIVY_TIMEZONE": "Europe/Berlin",
        }
    )
    assert chosen.evidence_days == 0.0
    retrieval = RetrievalSettings.of(chosen)
    assert not retrieval.evidence and retrieval.gate.min_relevance == 0.2
    assert retrieval.evidence_tokens == 50 and retrieval.timezone == "Europe/Berlin"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"VIVY_EVIDENCE_DAYS": "-1"}, "VIVY_EVIDENCE_DAYS='-1'"),
        ({"VIVY_EVIDENCE_DAYS": "nan"}, "VIVY_EVIDENCE_DAYS='nan'"),
        ({"VIVY_RELEVANCE_THRESHOLD": "1.5"}, "VIVY_RELEVANCE_THRESHOLD='1.5'"),
        ({"VIVY_EVIDENCE_TOKENS": "ten"}, "VIVY_EVIDENCE_TOKENS='ten'"),
    ],
)
def test_recall_settings_are_checked(env: dict[str, str], named: str) -> None:
    """A bad retention, threshold or budget is refused with the variable and value named."""
    with pytest.raises(ConfigError, match=re.escape(named)):
        Settings.from_env(env)


def test_a_postgresql_url_selects_that_engine_and_is_shown_without_its_password() -> None:
    """``VIVY_DB=postgresql://…`` is the PostgreSQL engine; reports never print the password."""
    settings = Settings.from_env({"VIVY_DB": "postgresql://vivy:secret@db.example:5432/vivy"})
    assert settings.database_url == "postgresql://vivy:secret@db.example:5432/vivy"
    assert shown_database(settings) == "postgresql://db.example:5432/vivy"
    assert Settings.from_env({"VIVY_DB": "memory.db"}).database_url is None
    assert shown_database(Settings.from_env({"VIVY_DB": "memory.db"})) == "memory.db"


#: An OpenAI-compatible provider on a local server.
LOCAL = {"VIVY_LLM_PROVIDER": "openai", "VIVY_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"VIVY_LLM_PROVIDER": "gemini"},
            "VIVY_LLM_PROVIDER=gemini needs a Gemini API key: set GEMINI_API_KEY",
        ),
        (
            {"VIVY_EMBEDDING_PROVIDER": "gemini", "VIVY_LLM_PROVIDER": "offline"},
            "VIVY_EMBEDDING_PROVIDER=gemini needs a Gemini API key",
        ),
        ({"VIVY_LLM_PROVIDER": "ollama"}, "VIVY_LLM_PROVIDER='ollama' is not allowed"),
        (
            {"VIVY_LLM_PROVIDER": "openai"},
            "VIVY_OPENAI_API_KEY is not set and OpenAI (https://api.openai.com/v1) needs one",
        ),
        (
            {**LOCAL, "VIVY_OPENAI_BASE_URL": "localhost:11434/v1"},
            "VIVY_OPENAI_BASE_URL='localhost:11434/v1' is not an http(s) URL",
        ),
        (
            {"VIVY_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
            "VIVY_OPENAI_BASE_URL is set but no provider uses it: set VIVY_LLM_PROVIDER=openai",
        ),
        ({**LOCAL, "VIVY_OPENAI_EMBEDDING_DIMENSION": "0"}, "VIVY_OPENAI_EMBEDDING_DIMENSION='0'"),
        ({**LOCAL, "VIVY_OPENAI_TIMEOUT_SECONDS": "0"}, "VIVY_OPENAI_TIMEOUT_SECONDS='0'"),
    ],
)
def test_a_provider_mistake_is_one_line_naming_the_variable(
    env: dict[str, str], message: str
) -> None:
    """A provider named without what it needs, a bad URL or bound, or endpoint settings that
    no provider uses: one line that starts with the variable and says the fix."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_provider_settings_are_read_into_settings() -> None:
    """Chat on a local server, embeddings offline, the pro model defaulting to the flash one."""
    settings = Settings.from_env(
        {
            **LOCAL,
            "VIVY_EMBEDDING_PROVIDER": "Offline",
            "VIVY_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/",
            "VIVY_OPENAI_FLASH_MODEL": "qwen2.5:7b",
            "VIVY_OPENAI_QUERY_PREFIX": " search_query: ",
        }
    )
    assert (settings.llm_provider, settings.embedding_provider) == ("openai", "offline")
    chosen = settings.providers
    assert chosen.openai_base_url == "http://127.0.0.1:11434/v1"
    assert (chosen.openai_flash_model, chosen.openai_pro_model) == ("qwen2.5:7b", "qwen2.5:7b")
    assert chosen.openai_query_prefix == "search_query:" and chosen.openai_api_key is None
    assert (Settings().llm_provider, Settings(gemini_key="k").embedding_provider) == (
        "offline",
        "gemini",
    )
