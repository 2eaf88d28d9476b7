"""The retrieval SQL: safe keyword queries, term pruning and guild-scoped searches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlean

from tests.retrieval import add_member, add_note, new_note
from tests.storage import on_conn
from vivy.llm.offline import provider
from vivy.memory.evidence import windows_of
from vivy.storage import context_reads, evidence, search_types
from vivy.storage.sqlite import search as note_search
from vivy.storage.sqlite.db import Connection, Database
from vivy.storage.sqlite.fts import window_keyword_search
from vivy.storage.sqlite.schema import serialize_vector
from vivy.storage.vector_index import BinaryIndex
from vivy.text.terms import MAX_TERMS, PIECE, TermMatcher, compounds, query_terms, words

GUILD_A = 1
GUILD_B = 2


def sqlite_vectors() -> BinaryIndex[Connection]:
    """A fresh in-memory copy of a SQLite database's vectors."""
    return BinaryIndex(note_search.SQLITE_VECTORS)


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A fresh database, used synchronously."""
    database = Database.open(tmp_path / "vivy.db", inline=True)
    yield database
    database.close()


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        (
            "What did Maya say to order at Bouldin Creek Cafe?",
            ["maya", "order", "bouldin", "creek", "cafe"],
        ),
        ("what was that LEDG-4012 thing Sam got paged for?", ["ledg", "4012", "sam", "paged"]),
        ('title: "x" OR y* NEAR(a b) -c ^d', ["title", "near"]),
        ("<@123456> hey <@!42> look at <#99> <:owl:777> https://x.y/z?q=1 owls", ["look", "owls"]),
        ("Café crème brûlée", ["café", "crème", "brûlée"]),
        ("the the THE and a", []),
        ("7 a 7 b", ["7"]),
        ("", []),
        (
            "Why didn't Sam’s dog and Tim's cat come? Who won? We won’t know",
            ["sam", "dog", "tim", "cat", "come", "won"],
        ),
        ("She doesn’t, isn't, hasn't", []),
    ],
)
def test_query_terms(text: str, terms: list[str]) -> None:
    """Words only, lower-cased and deduplicated; stop words, markup and syntax dropped; a
    contraction that is a stop word is dropped whole, a possessive gives its name."""
    assert query_terms(text) == terms


def test_one_tokenizer_at_three_grains() -> None:
    """A word joins its pieces through inner apostrophes, straight or typographic; its
    pieces are the runs of letters and digits that FTS5's unicode61 tokenizer indexes; a
    compound joins words by hyphens, underscores or a dot before a letter, not before a
    digit."""
    text = "Don’t say Sam's node.js self-driving max_age v3.5 l'été 'quoted'"
    said = "don't say sam's node js self driving max age v3 5 l'été quoted".split()
    assert words(text) == said
    assert PIECE.findall(" ".join(said)) == (
        "don t say sam s node js self driving max age v3 5 l été quoted".split()
    )
    assert compounds(text) == (
        "don't say sam's node.js self-driving max_age v3 5 l'été quoted".split()
    )


def test_terms_are_capped() -> None:
    """A long message yields at most 16 terms."""
    text = " ".join(f"word{i}" for i in range(40))
    assert len(query_terms(text)) == MAX_TERMS


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("Bento's vet", '"bento" OR "vet"'),
        ('"; DROP TABLE notes; -- NEAR(x)', '"drop" OR "table" OR "notes" OR "near"'),
        ("? ! ...", None),
    ],
)
def test_fts_query_quotes_every_term(text: str, expression: str | None) -> None:
    """The MATCH expression is quoted terms joined by OR, never raw user text."""
    assert note_search.match_expression(query_terms(text)) == expression


@pytest.mark.parametrize(
    ("counts", "budget", "kept"),
    [
        ({"rare": 2, "mid": 30, "common": 400}, 5000, ["rare", "mid", "common"]),
        ({"rare": 2, "mid": 30, "common": 400}, 100, ["rare", "mid"]),
        ({"huge": 6000}, 5000, []),
        ({"absent": 0, "rare": 1}, 5000, ["rare"]),
        ({"b": 3, "a": 3}, 5000, ["a", "b"]),
    ],
)
def test_prune_terms(counts: dict[str, int], budget: int, kept: list[str]) -> None:
    """Rarest first within the postings budget; terms in no note dropped."""
    assert search_types.prune_terms(list(counts), counts, budget) == kept


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bento the corgi learned a trick", {"bento", "trick"}),
        ("Bento slept all day", {"bento"}),
        ("A corgi is a dog", set()),
        ("BENTO's TRICK!", {"bento", "trick"}),
        ("Bentō tricks", {"bento", "trick"}),
    ],
)
def test_term_matcher(text: str, expected: set[str]) -> None:
    """The searched terms a text contains, case, accents and plural folded."""
    assert TermMatcher.of(["bento", "trick"]).found(text) == expected


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("Tim's violin", {"tim"}),
        ("it is time to go", set()),
        ("Tīm, at last", {"tim"}),
        ("timtim tim", {"tim"}),
        ("optimism", set()),
    ],
)
def test_term_matcher_whole_words(text: str, whole: set[str]) -> None:
    """A term held as a whole word, not as the start of a longer one: how a name is held."""
    matcher = TermMatcher.of(["tim"])
    assert matcher.held(text)[1] == whole


def test_term_weight_stays_positive() -> None:
    """Rare terms weigh more; a term in every note still weighs more than nothing."""
    assert search_types.term_weight(1, 1000) > search_types.term_weight(100, 1000) > 0
    assert search_types.term_weight(4, 4) > 0


def vector_of(text: str) -> bytes:
    """The offline query vector of ``text``."""
    return serialize_vector(provider.shared_embedder().embed([text])[0])


def test_vector_search_stays_in_the_guild_partition(db: Database) -> None:
    """A guild sees only its own notes, however close another guild's vectors are."""
    text = "Bento the corgi learned to roll over"
    for i in range(30):
        db.write_sync(add_note, new_note(GUILD_A, f"{text} {i}", text))
    mine = db.write_sync(add_note, new_note(GUILD_B, "Pottery class", "Glazing mugs"))
    found = db.read_sync(
        lambda conn: note_search.vector_search(
            conn,
            sqlite_vectors(),
            GUILD_B,
            vector_of(text),
            note_type=None,
            limit=5,
            candidates=5,
        )
    )
    assert [match.note_id for match in found] == [mine]
    assert -1.0 <= found[0].similarity <= 1.0


def test_vector_search_reranks_exactly_and_filters_type(db: Database) -> None:
    """Candidates are re-ranked by exact cosine; the note type filter is in the index."""
    best = db.write_sync(add_note, new_note(GUILD_A, "Sourdough starter", "Feeding the starter"))
    db.write_sync(add_note, new_note(GUILD_A, "Sourdough", "Bread", note_type="topic_cluster"))
    db.write_sync(add_note, new_note(GUILD_A, "Chess openings", "Sicilian defence"))
    query = vector_of("Channel: #general\nSourdough starter\nFeeding the starter")
    found = db.read_sync(
        lambda conn: note_search.vector_search(
            conn,
            sqlite_vectors(),
            GUILD_A,
            query,
            note_type="conversation",
            limit=5,
            candidates=40,
        )
    )
    assert found[0].note_id == best
    assert len(found) == 2
    assert [m.similarity for m in found] == sorted((m.similarity for m in found), reverse=True)


def test_keyword_search_filters_the_guild_before_the_limit(db: Database) -> None:
    """Many better matches in another guild cannot push a guild's only match out."""
    for i in range(15):
        db.write_sync(
            add_note, new_note(GUILD_A, f"Bouldin Creek Cafe {i}", "Bouldin Creek Cafe brunch")
        )
    mine = db.write_sync(add_note, new_note(GUILD_B, "Dinner plans", "Maybe Bouldin Creek"))
    for i in range(20):
        db.write_sync(add_note, new_note(GUILD_B, f"Filler {i}", "Nothing to see"))
    terms = ("bouldin", "creek", "cafe")
    found = db.read_sync(
        lambda conn: note_search.keyword_search(
            conn, GUILD_B, note_search.plan_terms(conn, terms), note_type=None, limit=1
        )
    )
    assert [match.note_id for match in found] == [mine]
    assert found[0].bm25 > 0
    # Its coverage: the idf-weighted share of the terms it holds (no evidence: notes' idf).
    result = db.read_sync(
        note_search.search_notes_sync,
        sqlite_vectors(),
        search_types.NoteSearch(GUILD_B, None, terms, None, candidates=5, keyword_candidates=1),
    )
    assert [c.note_id for c in result.candidates] == [mine]
    assert result.candidates[0].coverage == pytest.approx(
        (search_types.term_weight(16, 36) * 2)
        / (search_types.term_weight(16, 36) * 2 + search_types.term_weight(15, 36))
    )


def test_term_counts_are_kept_until_another_connection_commits(
    db: Database, tmp_path: Path
) -> None:
    """A side's term counts are read once while nothing is committed, and read again (with the
    new note counted) after the owner's connection commits; the plans equal fresh ones."""
    for i in range(3):
        db.write_sync(add_note, new_note(GUILD_A, f"Otter {i}", "An otter swims"))
    side = sqlean.connect(str(tmp_path / "vivy.db"))
    statements: list[str] = []
    side.set_trace_callback(statements.append)
    counts = note_search.TermCounts()
    try:
        first = note_search.plan_terms(side, ["otter", "heron"], counts=counts)
        assert first == note_search.plan_terms(side, ["otter", "heron"])
        statements.clear()
        assert note_search.plan_terms(side, ["heron", "otter"], counts=counts) == first
        assert statements == ["PRAGMA data_version"]  # nothing counted again
        db.write_sync(add_note, new_note(GUILD_A, "Heron", "A heron and an otter"))
        again = note_search.plan_terms(side, ["otter", "heron"], counts=counts)
        assert again == note_search.plan_terms(side, ["otter", "heron"])
        assert set(again.weights) == {"otter", "heron"} and set(first.weights) == {"otter"}
        assert again.weights["otter"] != first.weights["otter"]
    finally:
        side.close()


def test_keyword_search_reads_past_many_batches_of_another_guild(db: Database) -> None:
    """A guild's match ranked below hundreds of another guild's is still found, by type."""
    for i in range(300):
        db.write_sync(add_note, new_note(GUILD_A, f"Otter otter {i}", "Otter otter otter"))
    chat = db.write_sync(add_note, new_note(GUILD_B, "Dinner", "An otter"))
    cluster = db.write_sync(
        add_note, new_note(GUILD_B, "Lunch", "One otter", note_type="topic_cluster")
    )

    def found(note_type: str | None) -> list[int]:
        return [
            match.note_id
            for match in db.read_sync(
                lambda conn: note_search.keyword_search(
                    conn,
                    GUILD_B,
                    note_search.plan_terms(conn, ["otter"], budget=1000),
                    note_type=note_type,
                    limit=1,
                )
            )
        ]

    assert found(None) == [chat]
    assert found("topic_cluster") == [cluster]
    assert found("conversation") == [chat]


def test_window_keyword_search_filters_the_guild_before_the_limit(db: Database) -> None:
    """Evidence windows of another guild that rank higher never crowd out the guild's own."""
    other = db.write_sync(add_note, new_note(GUILD_A, "Other", "Other"))
    mine = db.write_sync(add_note, new_note(GUILD_B, "Mine", "Mine"))

    def windows(conn: Connection) -> None:
        rows = [(other, GUILD_A, i, i, "heron heron heron") for i in range(300)]
        rows.append((mine, GUILD_B, 999, 999, "a heron among many words of a long line"))
        conn.executemany(
            "INSERT INTO evidence_windows (note_id, guild_id, first_message_id,"
            " last_message_id, text) VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    db.write_sync(windows)
    found = db.read_sync(on_conn(window_keyword_search), GUILD_B, '"heron"', limit=2)
    assert [(match.note_id, match.score > 0) for match in found] == [(mine, True)]
    crowd = db.read_sync(on_conn(window_keyword_search), GUILD_A, '"heron"', limit=250)
    assert len(crowd) == 250


@pytest.mark.parametrize("text", ['"', "NEAR(", "title:x", "a*", "-", "AND OR NOT", "^"])
def test_keyword_search_survives_fts_syntax(db: Database, text: str) -> None:
    """Messages full of FTS5 operators never reach FTS5 as syntax."""
    db.write_sync(add_note, new_note(GUILD_A, "Near the title", "Operators and stars"))
    terms = query_terms(text)
    found = db.read_sync(
        lambda conn: note_search.keyword_search(
            conn, GUILD_A, note_search.plan_terms(conn, terms), note_type=None, limit=5
        )
    )
    assert isinstance(found, list)


def test_member_names_prefer_the_guild_nickname(db: Database) -> None:
    """Guild display name first, then this guild's note name; never another guild's."""
    db.write_sync(add_note, new_note(GUILD_A, "T", "S", participants=((7, "sev-in-notes"),)))
    db.write_sync(add_note, new_note(GUILD_B, "T", "S", participants=((8, "eight-in-b"),)))
    db.write_sync(lambda conn: conn.execute("DELETE FROM guild_members"))
    db.write_sync(add_member, GUILD_A, 9, "Nine")
    names = db.read_sync(context_reads.member_names, GUILD_A, [7, 8, 9, 10])
    assert names == {7: "sev-in-notes", 9: "Nine"}


def test_memory_version_changes_with_notes_facts_and_lore(db: Database) -> None:
    """The fingerprint moves when anything a context is built from changes."""
    first = db.read_sync(context_reads.memory_version, GUILD_A)
    db.write_sync(add_note, new_note(GUILD_A, "T", "S"))
    second = db.read_sync(context_reads.memory_version, GUILD_A)
    db.write_sync(
        lambda conn: conn.execute(
            "INSERT INTO server_lore (guild_id, text, author_id, created_at) VALUES (?, 'x', 1, 0)",
            (GUILD_A,),
        )
    )
    third = db.read_sync(context_reads.memory_version, GUILD_A)
    assert len({first, second, third}) == 3


def test_windows_a_side_cannot_compare_are_compared_on_the_main_connection(
    db: Database, tmp_path: Path
) -> None:
    """Side connections without sqlite-vec find keywords but fail to compare windows; the
    main connection compares them, so the candidates equal a search without sides."""
    for title, line in (("Baking", "rye flour and a sourdough starter"), ("Chess", "rye openings")):
        note_id = db.write_sync(add_note, new_note(GUILD_A, title, "A chat"))
        windows = windows_of([(note_id * 10, "Sam", line)])
        vectors = provider.shared_embedder().embed([w.text for w in windows])
        db.write_sync(evidence.insert_windows, note_id, GUILD_A, windows, vectors)
    query = search_types.NoteSearch(
        GUILD_A,
        provider.shared_embedder().embed(["rye flour sourdough"])[0],
        ("rye", "flour"),
        None,
        candidates=1,  # the vector search finds one note; the other only by keyword
        keyword_candidates=5,
    )
    plain = [sqlean.connect(str(tmp_path / "vivy.db"), check_same_thread=False) for _ in range(2)]
    try:
        with_sides = db.read_sync(
            on_conn(note_search.search_notes_sync),
            sqlite_vectors(),
            query,
            plain,
        )
    finally:
        for conn in plain:
            conn.close()
    alone = db.read_sync(on_conn(note_search.search_notes_sync), sqlite_vectors(), query)
    assert with_sides == alone
    assert len(with_sides.candidates) == 2
    assert all(c.window_similarity is not None for c in with_sides.candidates)
    assert {c.window_bm25 is not None for c in with_sides.candidates} == {True}
