"""`memorybank reindex`: rebuild stale search terms, or (`--embeddings`) write the missing vectors."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

import attrs

from memorybank import semantic
from memorybank.commands.base import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    PROGRAM,
    CommandError,
    Shared,
    Subcommands,
    memories,
    runtime,
    suggest_compact,
)
from memorybank.settings import Settings, add_arguments
from memorybank_core.wording import pluralized

if TYPE_CHECKING:
    from adapters_mysql import ReindexReport, SqlStorage


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
    add_arguments(reindexing, "reindex")  # --embedder-model, for --embeddings
    reindexing.set_defaults(run=run_reindex)


def run_reindex(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    if args.embeddings:
        _reindex_embeddings(args, settings, out)
        return
    with runtime(settings) as opened:
        report = reindex_with_progress(opened.storage, everything=args.all, show_progress=sys.stderr.isatty())
        suggest_compact(settings, report.rewritten)
    print(f"{PROGRAM}: re-indexed {memories(report.rewritten)}", file=out)
    fail_on_broken(report)


def reindex_with_progress(
    storage: SqlStorage, *, everything: bool = False, show_progress: bool = True
) -> ReindexReport:
    """`SqlStorage.reindex` with a progress bar on stderr: re-index, `encrypt` and `keys rotate` alike.

    SQL storage's own upkeep (its search documents and seals), not a port: a host's store keeps its own.

    Raises:
        UnavailableError: storage cannot be reached; committed batches stay done.
    """
    from tqdm import tqdm

    total = storage.count_to_reindex(everything=everything)
    with tqdm(total=total, unit="memory", disable=not show_progress, file=sys.stderr) as bar:
        return storage.reindex(everything=everything, progress=bar.update)


def _reindex_embeddings(args: argparse.Namespace, settings: Settings, out: TextIO) -> None:
    from memorybank import bootstrap

    if args.all:
        raise CommandError("--all re-indexes search terms; --embeddings writes only missing vectors", EXIT_BAD_INPUT)
    # The vectors are the hybrid search's, whatever the deployment serves now.
    hybrid = attrs.evolve(settings, search=attrs.evolve(settings.search, mode="hybrid"))
    with bootstrap.build(hybrid) as opened:
        report = semantic.embed_with_progress(opened.storage, show_progress=sys.stderr.isatty())
        assert opened.storage.embedder is not None  # noqa: S101 - hybrid settings load one
        model_id = opened.storage.embedder.model_id
    print(f"{PROGRAM}: embedded {memories(report.embedded)} with {model_id}", file=out)
    if report.skipped:
        raise CommandError(
            f"{memories(report.skipped)} {pluralized(report.skipped, 'was')} not embedded: they do not open (logged "
            "by id) or were deleted meanwhile",
            EXIT_FAILURE,
        )


def fail_on_broken(report: ReindexReport) -> None:
    """Exit status 1 when some memories or vectors did not open with the key ring (a re-index or re-seal left them)."""
    if report.broken:
        raise CommandError(
            f"{memories(report.broken)} {'does' if report.broken == 1 else 'do'} not open with this key ring and "
            f"{'was' if report.broken == 1 else 'were'} left as {'it is' if report.broken == 1 else 'they are'} "
            "(ids in the log)"
        )
    if report.broken_vectors:
        raise CommandError(
            f"{report.broken_vectors} hybrid-search {'vector does' if report.broken_vectors == 1 else 'vectors do'} "
            "not open with this key ring and kept its old seal (memory ids in the log; those memories are found "
            f"by their words): run `{PROGRAM} reindex --embeddings` to write them again, then this command again"
        )
    if report.broken_revisions:
        count = report.broken_revisions
        raise CommandError(
            f"{count} kept earlier {'version does' if count == 1 else 'versions do'} not open with this key ring and "
            f"kept {'its' if count == 1 else 'their'} old seal (memory ids and revisions in the log); the keys "
            "they need stay in use"
        )
