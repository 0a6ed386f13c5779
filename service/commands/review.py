"""``deidstream review …``: the review workbench from the command line (docs/review.md).

``stats`` prints per-reviewer counts, Cohen's kappa for every pair of reviewers (over the
items both rated) and Fleiss' kappa across all (items with two or more ratings). ``add-user``
creates or replaces a reviewer account (the password from ``DEIDSTREAM_REVIEW_PASSWORD`` or a
prompt; stored scrypt-hashed). ``sync`` queues the held topic's inputs and ``settle``
releases the decided ones — what the service's loop does every ``review_sync_seconds``.
Nothing here prints text from a note.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any

import typer

from pipelines.review import DecisionKind, DocStatus, ReviewQueue, Role, Stats

KINDS = (DecisionKind.PHI, DecisionKind.NOT_PHI, DecisionKind.UNSURE, DecisionKind.REFER)


def _queue() -> ReviewQueue:
    from service.settings import settings_or_exit
    from service.wiring import open_keystore

    s = settings_or_exit()
    return ReviewQueue(open_keystore(s), reviews_per_item=s.review_reviews_per_item)


def _kappa(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def stats_lines(stats: Stats) -> list[str]:
    width = max([len("reviewer"), *(len(r) for r in stats.counts)])
    head = f"{'reviewer':<{width}}  {'decided':>7}" + "".join(f"  {k.value:>7}" for k in KINDS)
    lines = [head]
    for reviewer in sorted(stats.counts):
        counts = stats.counts[reviewer]
        rated = sum(counts[k] for k in KINDS if k is not DecisionKind.REFER)
        lines.append(
            f"{reviewer:<{width}}  {rated:>7}" + "".join(f"  {counts[k]:>7}" for k in KINDS)
        )
    lines.append("")
    lines.append("Cohen's kappa (pairs, over the items both rated):")
    if not stats.cohen:
        lines.append("  no item rated by two reviewers")
    for (a, b), (kappa, n) in sorted(stats.cohen.items()):
        lines.append(f"  {a} / {b}: {_kappa(kappa)} ({n} items)")
    lines.append(
        f"Fleiss' kappa (all reviewers): {_kappa(stats.fleiss)} "
        f"({stats.fleiss_items} items with two or more ratings)"
    )
    return lines


def register(app: typer.Typer) -> None:
    review_app = typer.Typer(
        help="The review workbench: agreement, accounts, held intake.", no_args_is_help=True
    )
    app.add_typer(review_app, name="review")

    @review_app.command("stats")
    def stats_command() -> None:
        """Per-reviewer counts, Cohen's kappa per pair, Fleiss' kappa across all."""
        queue = _queue()
        try:
            for line in stats_lines(queue.stats()):
                typer.echo(line)
            items, docs = queue.progress(), queue.db.doc_counts()
            typer.echo("items: " + ", ".join(f"{k} {v}" for k, v in items.items()))
            typer.echo(
                "held documents: "
                + ", ".join(f"{s.value} {docs.get(s.value, 0)}" for s in DocStatus)
            )
        finally:
            queue.store.close()

    @review_app.command("add-user")
    def add_user(
        username: Annotated[str, typer.Argument(help="Reviewer's user name")],
        role: Annotated[Role, typer.Option("--role", help="reviewer or expert")] = Role.REVIEWER,
    ) -> None:
        """Create (or replace) a reviewer account; password from DEIDSTREAM_REVIEW_PASSWORD
        or a prompt."""
        from service.review.auth import add_account

        password = os.environ.get("DEIDSTREAM_REVIEW_PASSWORD") or typer.prompt(
            "Password", hide_input=True, confirmation_prompt=True
        )
        queue = _queue()
        try:
            add_account(queue, username, password, role)
        except ValueError as exc:
            typer.echo(f"deidstream review add-user: {exc}", err=True)
            raise typer.Exit(2) from None
        finally:
            queue.store.close()
        typer.echo(f"account {username} ({role.value}) saved")

    @review_app.command("sync")
    def sync_command() -> None:
        """Queue every held input not queued yet, then release the decided ones."""
        from pipelines.phi.detector import Detector
        from pipelines.policy import Policy
        from service.commands.replay import quiet_kafka_client
        from service.review.intake import settle, sync
        from service.settings import settings_or_exit

        quiet_kafka_client()
        s = settings_or_exit()
        queue = _queue()
        try:
            detector = Detector(Policy.load(s.policy_file), lists=queue.lists)
            queued = asyncio.run(sync(s, queue, detector))
            done: list[Any] = settle(s, queue)
        finally:
            queue.store.close()
        typer.echo(f"queued {queued} held document(s)")
        for coords, status in done:
            typer.echo(f"{status.value} {coords}")
