"""Each benchmark runs end to end on a toy size, so none of them can rot. No timing is asserted."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from adapters_mysql.schema import memory
from benchmarks import (
    adversarial,
    controls,
    corpus,
    fulltext_churn,
    hybrid,
    inclusion,
    index_lag,
    neighbours,
    precision,
    purge_impact,
    rail_overhead,
    rate_limit_flood,
    recall,
    request_cost,
    route_profile,
    scale,
    secret_screen,
    similar,
    write_cost,
)
from benchmarks.common import DATABASE_PREFIX_ENV, SERVER_ENV, Timing, drop_database
from benchmarks.wrk import WrkLoad
from harness import secret_cases
from memorybank_search import TextAnalyzer
from tests.mysql_server import server_url
from tests.sql.backends import storage_at

#: Their own tier (`pytest -m benchmarks`, a step of .ci/run): the README's test command stays under 3 minutes.
pytestmark = pytest.mark.benchmarks


@pytest.fixture
def bench_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the benchmarks at the test server (fails under CI when there is none)."""
    url = server_url()
    monkeypatch.setenv(SERVER_ENV, url.render_as_string(hide_password=False))
    # Databases of this test's own: a benchmark run beside it (another checkout, a person) uses the same names.
    monkeypatch.setenv(DATABASE_PREFIX_ENV, f"memorybank_bench_{uuid.uuid4().hex[:6]}_")


def test_the_corpus_plants_its_words_at_the_promised_rates() -> None:
    writer = corpus.CorpusWriter(corpus.CorpusSpec(users=20))
    lines = [json.loads(line) for line in writer.lines()]
    assert len(lines) == 2000
    measured = [line for line in lines if line["user_id"] == writer.measured_user]
    assert len(measured) == corpus.MEMORIES_PER_USER

    def holding(word: str, rows: list[dict[str, object]]) -> int:
        return sum(word in re.findall(r"\w+", str(row["content"]).lower()) for row in rows)

    assert [holding(w, measured) for w in (corpus.RARE, corpus.ONE_PERCENT, corpus.TEN_PERCENT)] == [2, 1, 10]
    assert holding(corpus.COMMON, measured) == 84
    assert 0.75 < holding(corpus.COMMON, lines) / len(lines) < 0.92
    # The same spec gives the same measured user, so kept databases stay comparable.
    assert corpus.CorpusWriter(corpus.CorpusSpec(users=1)).measured_user == writer.measured_user


def test_timing_percentiles() -> None:
    timing = Timing(tuple(float(n) for n in range(1, 101)))
    assert (timing.p50, timing.p95) == (50.5, 95.0)


@pytest.mark.mysql
def test_the_scale_benchmark_loads_and_queries_a_toy_table(
    bench_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        scale.main(["load", "--rows", "300", "--reload"])
        scale.main(["load", "--rows", "300"])
        scale.main(["query", "--rows", "300", "--repeats", "3", "--budget", "1"])
    finally:
        drop_database("300")
    out = capsys.readouterr().out
    assert "imported 300 memories" in out
    assert "already loaded; kept" in out
    assert "| 84 % word |" in out


def _toy_locomo(tmp_path: Path) -> Path:
    # A LoCoMo-shaped toy file: the real data is never copied into the repository.
    data = [
        {
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso last week"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "We deploy the new service on Friday"},
                    {"speaker": "Ann", "dia_id": "D1:3", "text": "Lunch was ramen", "blip_caption": "a bowl"},
                ],
            },
            "qa": [
                {"question": "What is the name of Ann's cat?", "evidence": ["D1:1"], "category": 4},
                {"question": "When is the deployment?", "evidence": ["D:1:02"], "category": 2},
                {"question": "Unanswerable?", "evidence": ["D"], "category": 5},
            ],
        }
    ]
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.mysql
def test_the_recall_benchmark_scores_every_engine_on_a_toy_conversation(
    bench_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _toy_locomo(tmp_path)
    try:
        recall.main(["--engines", "--data", str(path)])
    finally:
        drop_database("recall")
    out = capsys.readouterr().out
    assert "2 questions" in out
    for engine in ("in-memory reference", "SQLite owner-scoped", "MySQL owner-scoped", "bm25s", "FTS5 porter"):
        assert engine in out
    assert "| MySQL owner-scoped | 1.000 | 1.000 | 1.000 |" in out


@pytest.mark.mysql
def test_the_write_cost_benchmark_saves_with_every_engine(
    bench_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        write_cost.main(["--saves", "10", "--rounds", "1"])
    finally:
        drop_database("writes_owner")
        drop_database("writes_seed")
    out = capsys.readouterr().out
    assert "seed's FULLTEXT index only" in out
    assert "saves/s" in out


def test_the_controls_benchmark_prints_both_variants_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    controls.main(["--repeats", "3", "--budget", "1"])
    out = capsys.readouterr().out
    assert "| SQLite file | list 20 |" in out
    assert "| SQLite file | save |" in out


def test_the_flood_benchmark_times_the_limiter_and_reads_wrks_summary() -> None:
    allowed, refused = rate_limit_flood.limiter_cost("memory://", calls=50)
    output = "  Requests/sec:    287.45\n  Non-2xx or 3xx responses: 1702\n"

    assert allowed > 0
    assert refused > 0
    assert rate_limit_flood._wrk_summary(output) == (287.45, 1702)


@pytest.mark.mysql
def test_the_purge_impact_benchmark_times_another_users_search_around_a_toy_purge(
    bench_server: None, capsys: pytest.CaptureFixture[str]
) -> None:
    purge_impact.main(["--memories", "300", "--seconds", "0.5", "--batch-size", "20"])

    out = capsys.readouterr().out
    assert "purge: 300 memories, 300 contexts" in out
    assert "| idle, before |" in out
    assert "| idle, after |" in out
    assert "| idle, after OPTIMIZE TABLE memory |" in out


def test_the_secret_screen_benchmark_counts_false_positives_and_prices_a_save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "The password for the office wifi rotates every 30 days"},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Our API uses a token bucket limiter"},
    ]
    path = tmp_path / "toy.json"
    path.write_text(
        json.dumps([{"conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns}, "qa": []}])
    )

    secret_screen.main(["--data", str(path), "--saves", "10"])
    paraphrases = json.loads(hybrid.PARAPHRASES.read_text())["items"]

    out = capsys.readouterr().out
    assert "| LoCoMo turns | 2 | 0 |" in out
    assert f"| harmless table (tests/secrets) | {len(secret_cases.harmless())} | 0 |" in out
    assert f"| paraphrases (benchmarks/paraphrases.json) | {2 * len(paraphrases)} | 0 |" in out
    assert (
        f"Real-shaped credentials found with their kind: {len(secret_cases.secrets())} of {len(secret_cases.secrets())}"
        in out
    )
    assert "The screen adds" in out


def test_every_paraphrase_question_shares_no_analyzed_term_with_its_memory() -> None:
    items = json.loads(hybrid.PARAPHRASES.read_text())["items"]
    analyzer = TextAnalyzer()
    assert len(items) >= 50
    assert len({item["memory"] for item in items}) == len(items)
    for item in items:
        shared = set(analyzer.query_terms(item["question"])) & set(analyzer.document_terms(item["memory"]))
        assert not shared, (item, shared)


def test_the_precision_benchmark_prints_recall_beside_precision_for_both_engines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recall.main(["--data", str(_toy_locomo(tmp_path))])
    out = capsys.readouterr().out
    rows = {
        line.split(" | ")[0].lstrip("| "): line.strip(" |").split(" | ") for line in out.splitlines() if ": " in line
    }
    for half in ("tuning", "held-out"):
        for engine in ("hybrid", "lexical"):
            assert f"notes, {half}: {engine}" in rows
    # The notes bank: 130 answerable and 50 unanswerable questions, cut in two halves.
    assert rows["notes, tuning: hybrid"][1:2] == ["65"]
    assert rows["notes, tuning: hybrid"][6:7] == ["25"]
    # Lexical search finds none of the questions that share no word with their memory; hybrid finds most.
    assert rows["notes, tuning: lexical"][4] == "0.000"
    assert float(rows["notes, tuning: hybrid"][4]) > 0.5
    # The toy conversation: its answerable question, asked of its own bank.
    assert rows["LoCoMo, tuning: lexical"][1:4] == ["2", "1.000", "1.000"]


def test_the_inclusion_tuner_replays_what_the_fusion_stage_saw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    captured = tmp_path / "captured.pkl"
    inclusion.main(["capture", "--data", str(_toy_locomo(tmp_path)), "--out", str(captured)])
    inclusion.main(["replay", "--out", str(captured)])
    out = capsys.readouterr().out
    rows = {
        line.split(" | ")[0].lstrip("| "): line.strip(" |").split(" | ") for line in out.splitlines() if ": " in line
    }
    # The notes bank's questions, both halves, ranked again by the shipped rule from the recorded inputs.
    assert rows["notes, tuning: hybrid"][1:2] == ["65"]
    assert float(rows["notes, held-out: hybrid"][4]) > 0.5
    assert rows["LoCoMo, tuning: hybrid"][1:2] == ["2"]
    # The same file, with its vectors, read by the neighbourhood exploration: the ceiling, the gate bound, the sweep.
    neighbours.main(["--out", str(captured)])
    out = capsys.readouterr().out
    ceiling = [
        line
        for line in out.splitlines()
        if line.split()[:3] in (["cosine", "notes", "tuning"], ["cosine", "notes", "held-out"])
    ]
    assert len(ceiling) == 2  # the notes' two halves
    assert all(0.5 < float(line.split(" top5 ")[1].split()[0]) <= 1 for line in ceiling)
    assert "best standing (shipped z)" in out
    assert "| notes, held-out: hybrid (shipped, replayed) | 65 |" in out
    assert "mutual nearest neighbours" in out


def test_the_precision_sets_are_labelled_as_they_say(tmp_path: Path) -> None:
    # Every answer is a memory of the bank, unanswerable questions name none, no question is asked twice.
    bank = precision.notes_bank()
    assert len(bank.memories) == len(set(bank.memories)) == 100
    texts = [question.text for question in bank.questions]
    assert len(texts) == len(set(texts))
    answerable = [question for question in bank.questions if question.relevant]
    assert len(answerable) == 130
    assert sum(question.paraphrase for question in answerable) >= 95
    unanswerable = [question for question in bank.questions if not question.relevant]
    assert (len(unanswerable), sum(question.near_miss for question in unanswerable)) == (66, 16)
    assert {question.half for question in bank.questions} == {0, 1}


def test_the_hybrid_recall_benchmark_compares_both_servers_on_a_toy_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hybrid.main(["recall", "--data", str(_toy_locomo(tmp_path))])
    out = capsys.readouterr().out
    assert "| hybrid (serve --search hybrid) |" in out
    assert "| lexical (serve --search lexical) | 1.000 | 1.000 | 1.000 |" in out
    assert "recall@10 hybrid - lexical: " in out
    assert "paraphrase set (60 questions" in out


@pytest.mark.mysql
def test_the_hybrid_speed_benchmark_prints_both_engines_on_mariadb(
    bench_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hybrid.main(["speed", "--data", str(_toy_locomo(tmp_path)), "--memories", "6", "--searches", "2"])
    out = capsys.readouterr().out
    assert "one user with 6 memories" in out
    assert "hybrid / lexical search p50:" in out
    assert re.search(r"resident memory per process of the hybrid server \(MB\): \d+", out)
    assert re.search(r"model load in a fresh process .*: \d+\.\d\d s", out)


@contextmanager
def _cost_corpus(backend: str, rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """request_cost's corpus of `rows` for the block; after it the corpus must be as it was, then it is dropped.

    Each test takes its own size, so its own MariaDB database: xdist runs them side by side.
    """
    if backend == "mariadb":
        monkeypatch.setenv(SERVER_ENV, server_url().render_as_string(hide_password=False))
    monkeypatch.setattr(request_cost, "SQLITE_HOME", tmp_path)
    try:
        yield
        # What the run saved is gone: a second run measures the same corpus.
        storage = storage_at(request_cost._url(backend, rows))
        try:
            with storage.engine.connect() as connection:
                assert connection.execute(sa.select(sa.func.count()).select_from(memory)).scalar_one() == rows
        finally:
            storage.close()
    finally:
        if backend == "mariadb":
            drop_database(f"cost_{rows}")


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)])
def test_the_request_cost_benchmark_prints_its_ratios_round_trips_and_load(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with _cost_corpus(backend, 200, tmp_path, monkeypatch):
        request_cost.main(["--backend", backend, "--rows", "200", "--iterations", "3", "--duration", "1"])
    out = capsys.readouterr().out
    assert "| HTTP list (20) p50 / bare p50 |" in out
    assert re.search(r"\| HTTP list p50 - in-process list p50, in bare p50s \| .* \| (PASS|MISS) \|", out)
    # Counted, not timed: a list is the two change counters and one joined read (MariaDB: 2 round trips).
    assert re.search(r"\| GET /healthz \| 0 \|", out)
    assert re.search(r"\| HTTP list \(20\) \| [1-9][0-9.]* \|", out)
    # Lexical: nothing is written after a save answered (hybrid writes a long save's vector then, ADR 0045).
    assert re.search(r"\| HTTP save, 2 contexts \| [1-9][0-9.]* \| 0 \| [0-9.]+ \|", out)
    # The database's own CPU beside the app's: MariaDB's threads, measured from /proc; SQLite's is the app's.
    database = r"[0-9.]+" if backend == "mariadb" else "in the app"
    assert re.search(rf"\| HTTP save, 2 contexts \| [0-9.]+ \| 0 \| [0-9.]+ \| [0-9.]+ x \| {database} \|", out)
    # The floor ran with the round trips each route was counted to make, beside the routes.
    assert re.search(r"\| floor: one hop \+ [1-9][0-9]* round trips \| [0-9.]+ \|", out)
    assert re.search(r"\| floor: GET /healthz \| [0-9.]+ \|", out)
    assert re.search(r"\| HTTP save, 2 contexts \| [1-9][0-9]* \| [0-9.]+ x \| [0-9.]+ x \| -?[0-9.]+ ms \|", out)
    assert re.search(r"\| mix 60/20/20 \| [0-9,]+ \|", out)
    assert "| mix requests/s / bare requests/s |" in out
    # The floor under the same load, each load's CPU per request, and the ceiling the database's work leaves.
    assert re.search(r"\| floor: one hop \+ 3 round trips \| [0-9,]+ \| [0-9.]+ \| [0-9.]+ \| 0 \|", out)
    assert re.search(r"\| mix 60/20/20 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|\n", out)
    ceiling = r"the mix's ceiling on this machine's \d+ cores .*: [0-9,]+ requests/s; at 1,000 .* -?[0-9.]+ ms"
    assert re.search(ceiling, out)
    # Issue 32: the rail beside REST, the mix against 1,000 requests/s, and (MariaDB) the round-trip targets.
    assert re.search(r"\| MCP search, rare word \(\w+\) \| [0-9.]+ \|", out)
    assert re.search(
        r"\| MCP save, 2 contexts p50 / HTTP save, 2 contexts p50 \| [0-9.]+ x \| ≤ 1.3 x \| (PASS|MISS) \|", out
    )
    assert re.search(r"\| mix requests/s \| [0-9,]+ \| ≥ 1,000 \| (PASS|MISS) \|", out)
    if backend == "mariadb":
        assert re.search(r"\| HTTP list \(20\): round trips \| 2 \| ≤ 2 \| PASS \|", out)
        assert re.search(r"\| HTTP search, rare word \(\w+\): round trips \| 3 \| ≤ 3 \| PASS \|", out)
        # The whole save, its `similar` look-up included (ADR 0042: the look-up's candidates ride the save's
        # commit; a load of what it found is the 4th): 3 or 4 (tests/sql/test_round_trips.py holds both).
        saved = re.search(r"\| HTTP save, 2 contexts: round trips \| ([0-9.]+) \| ≤ 4 \| PASS \|", out)
        assert saved is not None
        assert 3 <= float(saved[1]) <= 4
        assert re.search(r"\| HTTP list \(20\): route p50 - floor p50 \| -?[0-9.]+ ms \|", out)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)])
def test_the_route_profile_splits_each_routes_cpu_into_layers(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with _cost_corpus(backend, 300, tmp_path, monkeypatch):
        route_profile.main(["--backend", backend, "--rows", "300", "--calls", "20"])
    out = capsys.readouterr().out
    assert re.search(r"\| \*\*CPU ms per request \(unprofiled\)\*\* \| \*\*[0-9.]+\*\* \|", out)
    # Every memory route reached the database through the SQL adapter; the bare request never did.
    row = next(line for line in out.splitlines() if line.startswith("| SQL adapter"))
    cells = [cell.strip() for cell in row.strip("|").split("|")][1:]
    assert cells[0] == "", row
    assert all(cell.endswith("%") for cell in cells[1:]), row


@pytest.mark.mysql
def test_the_hybrid_split_benchmark_times_every_stage_of_a_search(
    bench_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hybrid.main(["split", "--data", str(_toy_locomo(tmp_path)), "--memories", "6", "--searches", "2"])
    out = capsys.readouterr().out
    assert "one user with 6 memories, 2 LoCoMo questions; one hybrid search: p50" in out
    shares = dict(re.findall(r"^\| ([a-z ,()]+) \| [\d.]+ \| [\d.]+ \| (\d+) % \|$", out, re.MULTILINE))
    assert set(shares) == {
        "lexical",
        "read vectors",
        "embed query",
        "cosines",
        "centralities",
        "fusion",
        "the rest (the bank, loading the results)",
    }


def test_the_similar_benchmark_prints_both_measures_for_each_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    data = similar.load()
    assert len(data["pairs"]) >= 100
    assert len({(pair["topic"], pair["person"]) for pair in data["pairs"]}) == len(data["pairs"])
    small = {
        "pairs": [p for p in data["pairs"] if p["topic"] in ("home city", "employer")],
        "unrelated": data["unrelated"],
    }

    outcomes = similar.measure(small, None, (0.3, 0.9))

    assert outcomes[0.3].pairs == 8
    assert outcomes[0.3].unrelated == 4 * (len(data["unrelated"]) - similar.FILLER)
    assert outcomes[0.9].found <= outcomes[0.3].found
    similar.main(["--lexical-only"])
    out = capsys.readouterr().out
    assert "| lexical | 0.3 (default) |" in out
    assert "replaced found" in out


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mysql)])
def test_the_similar_benchmark_on_sql_answers_as_the_reference_engine_when_every_match_is_read(
    backend: str, bench_server: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = similar.load()
    small = {
        "pairs": [p for p in data["pairs"] if p["topic"] in ("home city", "employer")],
        "unrelated": data["unrelated"],
    }
    toy = _toy_locomo(tmp_path)

    bounded = similar.measure_sql(backend, small, (0.3, 0.9), 0, (1000, 2), toy)

    # Reading every match, the server's look-up is the reference engine's (the ranking contract); reading 2, the
    # replaced memory is still found.
    assert bounded[1000] == similar.measure(small, None, (0.3, 0.9))
    assert bounded[2][0.3].found >= 1
    similar.main(["--backend", backend, "--filler", "2", "--like", "1000", "4", "--data", str(toy), "--lexical-only"])
    out = capsys.readouterr().out
    assert f"similar on save, {backend}, 2 LoCoMo turns more in each bank" in out
    assert re.search(r"\| lexical \| 4 \| 0\.3 \(default\) \| .* \| \d+\.\d\d \|", out)


def test_the_adversarial_benchmark_prints_each_routes_worst_input_beside_its_typical_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    adversarial.main(["--fuzz-evaluations", "4", "--repeats", "1", "--no-embedder"])

    out = capsys.readouterr().out
    for route in ("REST save", "MCP rail postMemory", "import line (parse + screen)", "REST search"):
        assert f"| {route}" in out
    for component in ("secret screen", "search analyzer", "JSON decoder"):
        assert f"| {component} |" in out
    # Issue 27's reproduction gets its answer on every save route: refused, not stored, not 10 s later.
    assert "| REST save | issue 27: pwd=` (one backtick) |" in out
    assert out.count("422 screen_budget_exceeded") >= 2
    assert "worst save / typical save at the bounds:" in out
    # A save and a search over a bank holding more and more copies of the input (ADR 0044).
    for request in ("REST save", "REST search of its words"):
        assert f"| Han prose (bigrams that do not repeat) | {request} |" in out


def test_the_adversarial_benchmark_measures_hybrid_requests_apart_from_the_vectors_written_after(
    capsys: pytest.CaptureFixture[str],
) -> None:
    adversarial.main(["--fuzz-evaluations", "2", "--repeats", "1"])

    out = capsys.readouterr().out
    for route in ("REST save, hybrid", "REST search, hybrid"):
        assert f"| {route} | typical at the bounds: prose in every field |" in out
    # A save at the bounds answers before its vector: the worker's vector thread spends its embedding after.
    behind = re.search(r"\| typical at the bounds: prose in every field \| ([0-9.]+) \| ([0-9.]+) \|", out)
    assert behind is not None
    assert float(behind.group(2)) > 0
    # A short English memory is embedded in its request: nothing is left for the vector thread. It may still wake when
    # the save's queue changes (a few microseconds, seen as 0.01 ms), never for an embedding, which costs milliseconds.
    english = re.search(
        r"\| English: a sentence, a snippet and two tags \(embedded in the request\) \| [0-9.]+ \| ([0-9.]+) \|", out
    )
    assert english is not None
    assert float(english.group(1)) < 0.5 < float(behind.group(2))


def test_the_rail_overhead_benchmark_prints_both_ways_of_serving_a_post(capsys: pytest.CaptureFixture[str]) -> None:
    rail_overhead.main(["--calls", "3"])
    out = capsys.readouterr().out
    assert re.search(r"\| ping \| [0-9.]+ / [0-9.]+ \| [0-9.]+ / [0-9.]+ \| [0-9.]+ x \|", out)
    assert re.search(r"\| tools/list \| ", out)


@pytest.mark.usefixtures("bench_server")
def test_the_churn_benchmark_times_each_step_then_compacts_and_drops_its_database(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fulltext_churn.main(["--rows", "200", "--steps", "0", "30", "--calls", "3"])

    out = capsys.readouterr().out
    cell = r"([0-9.]+) \(([0-9.]+) x\)"
    rows = re.findall(rf"^\| ([^|]+) \| {cell} \| {cell} \| {cell} \|$", out, re.M)
    # Row 0's 23 saves (3 timed, 20 to warm) are deleted and counted: the next step deletes the 7 that make 30.
    assert [label.strip() for label, *_ in rows] == [
        "0 deleted since the last rebuild",
        "30 deleted since the last rebuild",
        "after `memorybank compact`",
    ]
    assert all(float(figure) > 0 for _label, *figures in rows for figure in figures)
    # The first row is the baseline of the ratios: each of its ratios is 1.
    assert [rows[0][index] for index in (2, 4, 6)] == ["1.00", "1.00", "1.00"]
    assert re.search(r"^`memorybank compact` \(OPTIMIZE TABLE memory over 200 memories\): [0-9.]+ s$", out, re.M)
    engine = sa.create_engine(server_url(), poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        left = connection.exec_driver_sql("SHOW DATABASES LIKE '%%fulltext_churn%%'").all()
    engine.dispose()
    assert left == []


@pytest.mark.usefixtures("bench_server")
def test_the_index_lag_benchmark_counts_saves_another_connection_did_not_find_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    index_lag.main(["--saves", "3", "--long-saves", "1", "--rounds", "2"])

    out = capsys.readouterr().out
    rows = re.findall(
        r"^\| (a sentence|invented words filling the content[^|]*|Han text at the index bound[^|]*)"
        r" \| (\d+) \| (\d+) \| [0-9.]+ \| (\d+) \|$",
        out,
        re.M,
    )
    assert [(memory.strip(), int(saves)) for memory, saves, _, _ in rows] == [
        ("a sentence", 3),
        ("invented words filling the content (8,000 characters)", 3),
        ("Han text at the index bound (20,480 terms)", 1),
    ]
    # Every save is found, at once or within moments: none is lost to the index.
    assert all(int(never) == 0 for *_, never in rows)
    # The second table: two rounds of searches right after eight saves each.
    watched = re.search(r"^\| 2 \| (\d+) \| (\d+) \| (\d+) \|$", out, re.M)
    assert watched is not None
    assert int(watched.group(1)) > 0


def test_the_mixs_ceiling_is_the_cores_over_the_floors_app_cpu_and_the_mixs_database_and_wrk_cpu() -> None:
    def run(what: str, *, per_second: float, app: float, database: float, wrk_cores: float) -> request_cost.LoadRun:
        load = WrkLoad(
            requests=round(per_second * 10),
            seconds=10.0,
            p50_ms=1.0,
            p90_ms=1.0,
            p99_ms=1.0,
            errors=0,
            app_cores=app,
            database_cores=database,
            wrk_cores=wrk_cores,
            other_cores=0.0,
        )
        return request_cost.LoadRun(what, load)

    # The mix: 500 requests/s, its database 0.6 cores (1.2 ms a request), wrk 0.05 (0.1 ms); the floor's app 0.9
    # cores at 2,000 requests/s (0.45 ms a request). Two cores over 0.45 + 1.2 + 0.1 ms: 1,143 requests/s.
    mix = run("mix", per_second=500, app=1.2, database=0.6, wrk_cores=0.05)
    floor = run(request_cost.FLOOR_LOAD, per_second=2000, app=0.9, database=0.1, wrk_cores=0.2)

    assert request_cost.ceiling_per_second(mix, floor, cores=2) == pytest.approx(2000 / 1.75)
    # At 1,000 requests/s two cores leave 2 ms a request: 0.7 of them for the app, beside 1.2 + 0.1.
    assert request_cost.app_budget_ms(mix, cores=2) == pytest.approx(0.7)
