"""`memorybank reindex`: rebuild stale search terms, or (`--embeddings`) write the missing vectors."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from memorybank import semantic
from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    PROGRAM,
    CommandError,
    Shared,
    Subcommands,
    memories,
)
from memorybank.settings import DatabaseChoice

if TYPE_CHECKING:
    from adapters_mysql import ReindexReport


def register(commands: Subcommands, shared: Shared) -> None:
    reindexing = commands.add_parser(
        "reindex",
        parents=[shared.database],
        help="rebuild the search index of memories indexed by an older scheme",
        description="Recompute the owner-scoped search terms of memories written by an older tokenization "
        "scheme (or of all, with --all), in batches of 1,000, with a progress bar. Safe to stop and rerun.",
    )
    reindexing.add_argument("--all", action="store_true", help="re-index every memory, not only stale ones")
    reindexing.add_argument(
        "--embeddings",
        action="store_true",
        help="instead, write the vector of every memory lacking one of the embedding model (hybrid search), in "
        "batches of 64, online, with a progress bar; safe to stop and rerun",
    )
    reindexing.add_argument(
        "--embedder-model",
        metavar="DIR",
        help=f"with --embeddings: your own model.onnx and tokenizer.json (default: ${semantic.EMBEDDER_MODEL_ENV}, "
        "else all-MiniLM-L6-v2 int8)",
    )
    reindexing.set_defaults(run=run_reindex)


def run_reindex(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition, portability

    if args.embeddings:
        _reindex_embeddings(args, choice, out)
        return
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        report = portability.reindex_with_progress(storage, everything=args.all, show_progress=sys.stderr.isatty())
    finally:
        storage.close()
    print(f"{PROGRAM}: re-indexed {memories(report.rewritten)}", file=out)
    fail_on_broken(report)


def _reindex_embeddings(args: argparse.Namespace, choice: DatabaseChoice, out: TextIO) -> None:
    from memorybank import composition

    if args.all:
        raise CommandError("--all re-indexes search terms; --embeddings writes only missing vectors", EXIT_BAD_INPUT)
    search = semantic.SearchChoice(
        mode="hybrid",
        embedder_model=semantic.choose_search("hybrid", args.embedder_model, args.environment).embedder_model,
    )
    embedder = semantic.load_embedder(search)
    storage = composition.open_ready_storage(choice, args.keys)
    try:
        semantic.apply_search(storage, search, embedder)
        report = semantic.embed_with_progress(storage, show_progress=sys.stderr.isatty())
    finally:
        storage.close()
    print(f"{PROGRAM}: embedded {report.embedded} memories with {embedder.model_id}", file=out)
    if report.skipped:
        raise CommandError(
            f"{report.skipped} memories were not embedded: they do not open (logged by id) or were deleted meanwhile",
            EXIT_FAILURE,
        )


def fail_on_broken(report: ReindexReport) -> None:
    """Exit status 1 when some memories did not open with the key ring (a re-index or re-seal left them)."""
    if report.broken:
        raise CommandError(
            f"{memories(report.broken)} {'does' if report.broken == 1 else 'do'} not open with this key ring and "
            f"{'was' if report.broken == 1 else 'were'} left as {'it is' if report.broken == 1 else 'they are'} "
            "(ids in the log)"
        )
