"""The real model: all-MiniLM-L6-v2 int8 from the semantic extra, loaded once for this module.

It finds what a person means (a paraphrase sharing no word with the memory) where lexical search
finds nothing; its files are checked before they load; sealed databases hold no readable vector.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest

import adapters_embedding.models
from adapters_crypto import AesGcmSealer, new_key_ring
from adapters_embedding import (
    DEFAULT_MODEL_ID,
    ModelFilesError,
    OnnxEmbedder,
    default_embedder,
    embedder_from_directory,
)
from adapters_embedding.models import check_default_files, default_model_path
from adapters_mysql import SqlStorage
from benchmarks import similar
from harness.served import REPO_ROOT, run_memorybank, served, serving
from memorybank import bootstrap, semantic
from memorybank.cli import build_parser, main
from memorybank.settings import Settings
from memorybank_core import Embedding, MemoryBank
from memorybank_core.bodies import JsonValue
from memorybank_core.ids import ORGANIZATION_PREFIX, USER_PREFIX, new_id
from memorybank_core.use_cases import SIMILAR_MIN_SHARE
from memorybank_search import embedding_text
from memorybank_search.hybrid import HybridSearch
from tests.conftest import User
from tests.sql.backends import bank_on, storage_at

PARAPHRASED = "The flight to Lisbon departs at 7:40 on Friday"
QUESTION = "when does my plane to Portugal leave?"
OTHERS = [
    "Grandma's recipe uses cardamom and saffron",
    "Renewed the passport; it expires in 2034",
    "The kitchen faucet leaks",
    "Marathon training: long run every Sunday",
    "My manager prefers written updates over meetings",
    "Salesforce onboarding was slow and painful",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return default_embedder()


def _storage(path: Path, embedder: OnnxEmbedder | None, *, sealed: bool = False) -> SqlStorage:
    storage = storage_at(f"sqlite:///{path}", AesGcmSealer(new_key_ring()) if sealed else None, embedder=embedder)
    storage.initialize()
    return storage


def _bank(storage: SqlStorage) -> MemoryBank:
    return bank_on(storage)


def _floats(vector: Embedding) -> list[float]:
    return [(value - 256 if value > 127 else value) * vector.scale for value in vector.values]


def test_the_model_gives_the_same_unit_vector_for_the_same_text(embedder: OnnxEmbedder) -> None:
    first, again, other = embedder.embed([QUESTION, QUESTION, PARAPHRASED])
    assert (embedder.model_id, embedder.dimension, first.dimension) == (DEFAULT_MODEL_ID, 384, 384)
    assert first == again
    assert first != other
    assert math.isclose(math.sqrt(sum(x * x for x in _floats(first))), 1.0, abs_tol=0.02)


def test_a_query_is_embedded_as_a_memory_is_up_to_its_bound_and_no_further(embedder: OnnxEmbedder) -> None:
    from adapters_embedding.onnx_embedder import QUERY_MAX_TOKENS

    assert embedder.embed_query(QUESTION) == embedder.embed([QUESTION])[0]
    # 512 Han characters are 512 tokens: a query reads its first QUERY_MAX_TOKENS, so a longer one costs no more.
    han = "".join(chr(0x4E00 + (n * 37) % 20_000) for n in range(512))
    assert embedder.token_count(han) == 256  # a memory reads the model's bound
    assert embedder.embed_query(han) == embedder.embed_query(han[: QUERY_MAX_TOKENS - 2] + "海港灯塔")
    assert embedder.embed_query(han) != embedder.embed([han])[0]


def test_a_query_runs_the_model_over_its_own_tokens_only(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tokenizer.json pads every text to 128 tokens; a question of 14 must cost the model 14 (a sixth of the work).
    lengths: list[int] = []
    run = OnnxEmbedder._run

    def counted(self: OnnxEmbedder, token_ids: Sequence[Sequence[int]], attention: Sequence[Sequence[int]]) -> Any:
        lengths.extend(len(ids) for ids in token_ids)
        return run(self, token_ids, attention)

    monkeypatch.setattr(OnnxEmbedder, "_run", counted)
    embedder.embed_query(QUESTION)
    embedder.embed([QUESTION])
    assert lengths == [embedder.token_count(QUESTION)] * 2


def test_token_count_is_what_the_model_reads(embedder: OnnxEmbedder) -> None:
    assert embedder.token_count("hello world") == 4  # two words and the two markers
    assert embedder.token_count(" ".join(["harbor"] * 1_000)) == 256


def test_hybrid_search_finds_the_paraphrase_lexical_search_misses(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    lexical = _storage(tmp_path / "lexical.sqlite3", None)
    hybrid = _storage(tmp_path / "hybrid.sqlite3", embedder)
    alice = User()
    for storage in (lexical, hybrid):
        for text in [*OTHERS, PARAPHRASED]:
            _bank(storage).save(alice, JsonValue({"content": text}))
    assert _bank(lexical).search(alice, query=QUESTION) == []
    found = _bank(hybrid).search(alice, query=QUESTION)
    assert found[0].memory.content == PARAPHRASED
    assert all(0 < result.score <= 1 for result in found)
    # Words still count: a query naming the memory's own word ranks it first with the full lexical half.
    exact = _bank(hybrid).search(alice, query="saffron")
    assert exact[0].memory.content == OTHERS[0]
    lexical.close()
    hybrid.close()


@pytest.mark.parametrize(
    "question",
    [
        "which podcast did my friend recommend?",
        "what is the parking policy at the new office?",
        "when does the kitchen renovation start?",
    ],
)
def test_a_question_the_bank_holds_nothing_about_finds_nothing(
    tmp_path: Path, embedder: OnnxEmbedder, question: str
) -> None:
    # The first two have a memory at cosine 0.17-0.18, which the old fixed floor (0.15) returned; none stands
    # out. The third shares one word ("kitchen") with "The kitchen faucet leaks", which hybrid search returned
    # as a word match until a word match had to hold two of a longer question's terms.
    hybrid = _storage(tmp_path / "hybrid.sqlite3", embedder)
    alice = User()
    for text in [*OTHERS, PARAPHRASED]:
        _bank(hybrid).save(alice, JsonValue({"content": text}))
    assert _bank(hybrid).search(alice, query=question) == []
    hybrid.close()


def test_a_sealed_database_holds_no_vector_as_readable_numbers(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    texts = [f"{text} (note {number})" for number, text in enumerate([*OTHERS, PARAPHRASED] * 3)]
    raw: dict[bool, bytes] = {}
    vectors: list[Embedding] = []
    for sealed in (False, True):
        directory = tmp_path / ("sealed" if sealed else "plain")
        directory.mkdir()
        storage = _storage(directory / "bank.sqlite3", embedder, sealed=sealed)
        bank, alice = _bank(storage), User()
        saved = [bank.save(alice, JsonValue({"content": text})) for text in texts]
        vectors = embedder.embed([embedding_text(memory) for memory in saved])
        storage.close()
        raw[sealed] = b"".join(path.read_bytes() for path in directory.iterdir())

    def readable(vector: Embedding, data: bytes) -> bool:
        as_floats = struct.pack("<16f", *_floats(vector)[:16])
        return vector.values[:24] in data or as_floats in data or vector.to_bytes() in data

    # The check can fail: a plaintext database holds every vector as it is.
    assert all(readable(vector, raw[False]) for vector in vectors)
    assert not any(readable(vector, raw[True]) for vector in vectors)


def test_a_model_file_that_is_not_the_pinned_one_is_refused_before_it_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "tokenizer.json"
    document = json.loads(adapters_embedding.models._TOKENIZER.read_text())
    document["model"]["vocab"]["kayak"] = 1
    tampered.write_text(json.dumps(document))
    monkeypatch.setattr(adapters_embedding.models, "_TOKENIZER", tampered)
    with pytest.raises(ModelFilesError, match="not the pinned"):
        default_embedder()


def test_a_model_onnx_that_is_not_the_pinned_one_is_refused_before_onnxruntime_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "model.onnx"
    data = bytearray(default_model_path().read_bytes())
    data[len(data) // 2] ^= 0x01  # one weight bit: a file that still loads, and embeds differently
    tampered.write_bytes(bytes(data))
    loaded: list[Path] = []
    monkeypatch.setattr(adapters_embedding.models, "default_model_path", lambda: tampered)
    monkeypatch.setattr(adapters_embedding.models, "OnnxEmbedder", lambda **files: loaded.append(files["model_path"]))
    with pytest.raises(ModelFilesError, match="not the pinned"):
        default_embedder()
    with pytest.raises(ModelFilesError, match="not the pinned"):
        check_default_files()
    assert loaded == []


def test_the_default_model_loads_and_embeds_with_the_network_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("the network is blocked by this test")

    for owner, name in [
        (socket.socket, "connect"),
        (socket.socket, "connect_ex"),
        (socket, "getaddrinfo"),
        (socket, "create_connection"),
    ]:
        monkeypatch.setattr(owner, name, refuse)
    # The block holds: a download would fail here.
    with pytest.raises(httpx2.ConnectError, match="blocked"):
        httpx2.get("https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2", timeout=5)
    attempts.clear()

    offline = default_embedder()
    [vector] = offline.embed([QUESTION])

    assert (vector.dimension, attempts) == (384, [])


def test_a_users_own_export_loads_from_a_directory_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    shutil.copy(default_model_path(), own / "model.onnx")
    shutil.copy(adapters_embedding.models._TOKENIZER, own / "tokenizer.json")
    loaded = embedder_from_directory(own)
    assert loaded.model_id.startswith("onnx-")
    assert loaded.dimension == 384
    # A broken file is named, never with the library's own parse message ("Model missing. at line 1 column 2").
    (own / "tokenizer.json").write_text('{"nope": 1}')
    with pytest.raises(ModelFilesError) as broken_tokenizer:
        embedder_from_directory(own)
    assert str(broken_tokenizer.value).endswith(f"{own / 'tokenizer.json'} is not a Hugging Face tokenizer.json")
    shutil.copy(adapters_embedding.models._TOKENIZER, own / "tokenizer.json")
    (own / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelFilesError) as broken_model:
        embedder_from_directory(own)
    assert str(broken_model.value) == (
        f"embedder-model {own} does not hold a sentence-embedding model: {own / 'model.onnx'} is not an ONNX model"
    )
    (own / "tokenizer.json").unlink()
    with pytest.raises(ModelFilesError, match=r"tokenizer\.json is missing"):
        embedder_from_directory(own)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_hybrid_without_the_semantic_extra_exits_with_the_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    for name in [module for module in sys.modules if module.startswith("adapters_embedding")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    database = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    status = main(["serve", "--search", "hybrid", "--workers", workers, "--db", database], env={})
    assert status == 1
    assert "hybrid search needs the semantic extra (onnxruntime is missing): pip install 'memorybank[semantic]'" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "bank.sqlite3").exists()


def test_an_unknown_search_mode_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["serve", "--db", f"sqlite:///{tmp_path / 'x.sqlite3'}"], env={"MEMORYBANK_SEARCH": "fuzzy"})
    assert status == 2
    assert "$MEMORYBANK_SEARCH must be lexical or hybrid, not 'fuzzy'" in capsys.readouterr().err


@pytest.mark.parametrize(("floor", "found"), [((), True), (("--hybrid-min-similarity", "0.95"), False)])
def test_the_similarity_floor_option_reaches_the_search(
    tmp_path: Path, embedder: OnnxEmbedder, floor: tuple[str, ...], found: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    args = build_parser({}).parse_args(["serve", "--db", url, "--search", "hybrid", *floor])

    with bootstrap.build(Settings.resolve(args, {}), embedder=embedder) as runtime:
        bank, me = runtime.services.bank, User()
        for text in [*OTHERS, PARAPHRASED]:
            bank.save(me, JsonValue({"content": text}))
        results = [result.memory.content for result in bank.search(me, query=QUESTION)]

    # The paraphrase shares no word with the question: only its cosine can let it through the floor.
    assert (PARAPHRASED in results) is found


@pytest.fixture
def imported(tmp_path: Path) -> tuple[str, str, str]:
    """A SQLite database with memories imported (lexical: no vectors), and their owner and organization."""
    url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    user, org = new_id(USER_PREFIX), new_id(ORGANIZATION_PREFIX)
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        "".join(json.dumps({"user_id": user, "org_id": org, "content": text}) + "\n" for text in [*OTHERS, PARAPHRASED])
    )
    assert run_memorybank(["import", str(lines), "--db", url]).returncode == 0
    return url, user, org


@pytest.mark.serve_processes
def test_serve_hybrid_finds_the_paraphrase_over_http_after_reindex_embeddings(imported: tuple[str, str, str]) -> None:
    url, user, org = imported
    backfill = run_memorybank(["reindex", "--embeddings", "--db", url], timeout=120)
    assert backfill.returncode == 0, backfill.stderr
    assert backfill.stdout.strip() == f"memorybank: embedded {len(OTHERS) + 1} memories with {DEFAULT_MODEL_ID}"
    again = run_memorybank(["reindex", "--embeddings", "--db", url], timeout=120)
    assert again.stdout.strip() == f"memorybank: embedded 0 memories with {DEFAULT_MODEL_ID}"
    secret = run_memorybank(["token", "create", "--db", url, "--user", user, "--org", org]).stdout.splitlines()[-1]
    headers = {"Authorization": f"Bearer {secret}"}
    with served(url, env={"MEMORYBANK_SEARCH": "hybrid"}) as base:
        answer = httpx2.get(f"{base}/v1/memory/search", params={"q": QUESTION}, headers=headers, timeout=30)
        saved = httpx2.post(f"{base}/v1/memory", json={"content": "The dentist moved my cleaning"}, headers=headers)
        teeth = httpx2.get(f"{base}/v1/memory/search", params={"q": "teeth appointment"}, headers=headers)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results[0]["content"] == PARAPHRASED
    assert all(0 < result["score"] <= 1 for result in results)
    # Why each is there: the paraphrase shares no word with the question, so it was found by meaning; and
    # nothing else in this bank stands out for a question about a flight.
    assert [(result["content"], result["match"]) for result in results] == [(PARAPHRASED, "meaning")]
    assert saved.status_code == 201
    assert teeth.json()["results"][0]["content"] == "The dentist moved my cleaning"
    with served(url, args=["--search", "lexical"]) as base:
        lexical = httpx2.get(f"{base}/v1/memory/search", params={"q": QUESTION}, headers=headers, timeout=30)
    assert lexical.json()["results"] == []


@pytest.mark.serve_processes
def test_two_hybrid_workers_each_embed_their_saves_and_find_the_paraphrase(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bank.sqlite3'}"
    secret = run_memorybank(["token", "create", "--db", url]).stdout.splitlines()[-1]
    headers = {"Authorization": f"Bearer {secret}"}
    log = tmp_path / "serve.log"
    with serving(url, args=["--workers", "2", "--search", "hybrid"], log=log) as server:
        # A new connection per request, so the kernel spreads them over both workers.
        for text in [*OTHERS, PARAPHRASED] * 2:
            saved = httpx2.post(f"{server.base_url}/v1/memory", json={"content": text}, headers=headers, timeout=30)
            assert saved.status_code == 201, saved.text
        answers = [
            httpx2.get(f"{server.base_url}/v1/memory/search", params={"q": QUESTION}, headers=headers, timeout=30)
            for _ in range(6)
        ]
    # Only a cosine finds the paraphrase (it shares no word with the question): every answer was hybrid.
    assert all(answer.json()["results"][0]["content"] == PARAPHRASED for answer in answers)
    assert log.read_text().count("Started server process") == 2
    # Every save, whichever worker took it, wrote its vector: nothing is left to backfill.
    backfill = run_memorybank(["reindex", "--embeddings", "--db", url], timeout=120)
    assert backfill.stdout.strip() == f"memorybank: embedded 0 memories with {DEFAULT_MODEL_ID}"


def _ready_details(base_url: str) -> dict[str, object]:
    answer = httpx2.get(f"{base_url}/readyz", timeout=30)
    assert answer.status_code == 200, answer.text  # serving all along, lexically for what lacks a vector
    details: dict[str, object] = answer.json()["details"]["vectors"]
    return details


def _until_filled(base_url: str, total: int) -> None:
    deadline = time.monotonic() + 120
    while (details := _ready_details(base_url))["state"] != "complete":
        assert details["state"] in {"filling", "filling in another worker"}, details
        assert time.monotonic() < deadline, details
        time.sleep(0.2)
    assert details == {"state": "complete", "embedded": total, "total": total}


@pytest.mark.serve_processes
@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_searches_hybrid_by_default_and_fills_missing_vectors_in_the_background(
    imported: tuple[str, str, str], tmp_path: Path, workers: str
) -> None:
    url, user, org = imported  # saved without vectors, as a lexical server or an import leaves them
    secret = run_memorybank(["token", "create", "--db", url, "--user", user, "--org", org]).stdout.splitlines()[-1]
    headers = {"Authorization": f"Bearer {secret}"}
    log = tmp_path / "serve.log"
    # No --search and no MEMORYBANK_SEARCH: the default.
    with serving(url, env={"MEMORYBANK_SEARCH": ""}, args=["--workers", workers], log=log) as server:
        _until_filled(server.base_url, len(OTHERS) + 1)
        found = httpx2.get(f"{server.base_url}/v1/memory/search", params={"q": QUESTION}, headers=headers, timeout=30)
    assert [(r["content"], r["match"]) for r in found.json()["results"]] == [(PARAPHRASED, "meaning")]
    text = log.read_text()
    assert "search: hybrid" in text
    if workers == "1":  # the banner counts what is missing (a supervisor of workers does not load the model)
        assert f"{len(OTHERS) + 1} memories have no vector yet" in text
    # One walk, whichever worker claimed it; counts in the log, never a memory's words.
    assert text.count(f"vectors: filled {len(OTHERS) + 1} memories") == 1
    assert not any(memory in text for memory in [*OTHERS, PARAPHRASED])
    backfill = run_memorybank(["reindex", "--embeddings", "--db", url], timeout=120)
    assert backfill.stdout.strip() == f"memorybank: embedded 0 memories with {DEFAULT_MODEL_ID}"


def test_a_default_hybrid_without_the_semantic_extra_serves_lexically_and_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [module for module in sys.modules if module.startswith("adapters_embedding")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    parsed = build_parser({}).parse_args(["serve", "--db", f"sqlite:///{tmp_path / 'bank.sqlite3'}"])
    settings = semantic.serving_default(Settings.resolve(parsed, {}))
    assert (settings.search.mode, settings.search.explicit) == ("hybrid", False)
    with bootstrap.build(settings) as runtime:
        assert runtime.settings.search.mode == "lexical"
        assert semantic.describe(runtime.storage, runtime.settings.search) == (
            "search: lexical (BM25 per user); hybrid search, the default, needs pip install 'memorybank[semantic]'"
        )


@pytest.mark.parametrize(
    ("argv", "env", "mode"),
    [
        (["serve"], {}, "hybrid"),
        (["mcp", "--user", "usr_01jwq4ks0mf6y9k7v3d8h2c5a1", "--org", "org_01jwq4ks0mf6y9k7v3d8h2c5a1"], {}, "hybrid"),
        (["serve"], {"MEMORYBANK_SEARCH": "lexical"}, "lexical"),
        (["serve", "--search", "lexical"], {"MEMORYBANK_SEARCH": "hybrid"}, "lexical"),
        (["import", "x.jsonl"], {}, "lexical"),
    ],
)
def test_serve_and_mcp_search_hybrid_unless_told_lexical(argv: list[str], env: dict[str, str], mode: str) -> None:
    settings = Settings.resolve(build_parser({}).parse_args([*argv, "--db", "sqlite://"]), env)
    if argv[0] in {"serve", "mcp"}:
        settings = semantic.serving_default(settings)
    assert settings.search.mode == mode
    # Every other process (and a host's `Settings.for_database`) keeps the declared lexical default.
    assert Settings.for_database("sqlite://").search.mode == "lexical"


def test_the_similar_figures_docs_search_md_shows_are_what_the_benchmark_measures(embedder: OnnxEmbedder) -> None:
    # Counts, not timings: each engine's row at its default share, as `python -m benchmarks.similar` prints it.
    documented = (REPO_ROOT / "docs" / "search.md").read_text(encoding="utf-8")
    data = similar.load()
    for engine, model, share in (
        ("lexical", None, SIMILAR_MIN_SHARE),
        ("hybrid", embedder, HybridSearch.similar_min_share),
    ):
        (row,) = similar.rows(engine, similar.measure(data, model, (share,)), share)
        assert "| " + " | ".join(row) + " |" in documented, engine
