"""``deidstream keys audit …``: read and check the key store's audit log (verify, show,
reanchor). Who revealed, forgot, rotated or previewed what, when and why — no PHI in any
line: subjects are keyed tags, so ``show --patient`` computes a patient's tags to find them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Annotated

import typer

from keystore.audit import AuditLine, AuditReport
from keystore.store import EncryptedStore

audit_app = typer.Typer(name="audit", help="The key store's audit log.", no_args_is_help=True)

PATIENT_PREFIX = "Patient/"


@contextmanager
def _opened() -> Iterator[EncryptedStore]:
    from service.commands.keys import _errors, _store

    with _errors(), _store() as store:
        yield store


def _broken(report: AuditReport) -> str:
    where = (
        f"line id {report.broken_at} (seq {report.broken_seq})"
        if report.broken_at is not None
        else "its head"
    )
    return (
        f"audit log broken at {where}: {report.problem}; the {report.head_seq} "
        "chained lines before it verify"
    )


@audit_app.command("verify")
def audit_verify(
    head: str | None = typer.Option(
        None,
        help="SEQ:MAC printed by an earlier verify: also check that line is still there "
        "(the store's sealed anchor finds a cut tail without it).",
    ),
) -> None:
    """Check the audit log's hash chain and its sealed head anchor; name the first line
    that fails, or what is wrong with the head (exit 1)."""
    with _opened() as store:
        report = store.admin.verify_audit(head)
    if report.ok:
        typer.echo(
            f"audit log intact: {report.lines} lines ({report.legacy_lines} from "
            f"before the chain), head anchored; head {report.head}"
        )
        return
    typer.echo(f"error: {_broken(report)}", err=True)
    raise typer.Exit(1)


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            "a date or time in ISO 8601 (2026-11-01 or 2026-11-01T08:00)", param_hint="--since"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _subjects(store: EncryptedStore, patient: str, authority: str | None) -> set[str]:
    """The keyed subjects of a patient's lines (its record and, while kept, pseudonym)."""
    admin = store.admin
    if patient.startswith(PATIENT_PREFIX):
        return admin.pseudonym_subjects(patient.removeprefix(PATIENT_PREFIX).strip())
    if authority is not None:
        return admin.audit_subjects(authority, patient)
    matches = admin.find_patient(patient)
    if not matches:
        typer.echo(
            "error: no live record with this id; a forgotten patient's lines are found "
            "with --authority",
            err=True,
        )
        raise typer.Exit(1)
    return {s for m in matches for s in admin.audit_subjects(m.authority, m.patient_id)}


def _row(line: AuditLine) -> dict[str, object]:
    return {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(line.at)),
        "seq": line.seq,
        "action": line.action,
        "operator": line.operator,
        "reason": line.reason,
        "subject": line.subject,
        "outcome": line.outcome,
    }


def _wanted(
    line: AuditLine, start: float | None, subjects: set[str] | None, actions: list[str] | None
) -> bool:
    if start is not None and line.at < start:
        return False
    if subjects is not None and line.subject not in subjects:
        return False
    return not actions or line.action in actions


def _text(line: AuditLine) -> str:
    row = _row(line)
    seq = "-" if line.seq is None else str(line.seq)
    reason = f"  reason: {line.reason}" if line.reason else ""
    return (
        f"{row['at']}  #{seq}  {line.action}  by {line.operator}  {line.outcome}"
        f"  subject {line.subject}{reason}"
    )


@audit_app.command("show")
def audit_show(
    since: str | None = typer.Option(None, help="Only lines at or after this UTC date/time."),
    patient: str | None = typer.Option(
        None,
        help="Only this patient's lines: the id the feed sends (an MRN), or "
        "Patient/<pseudonym> from the research output.",
    ),
    authority: str | None = typer.Option(
        None, help="Assigning authority of --patient (needed for a forgotten patient)."
    ),
    action: Annotated[
        list[str] | None,
        typer.Option(help="Only these actions (forget, reveal, reveal-visit, rotate, preview…)."),
    ] = None,
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
) -> None:
    """Who revealed, forgot, rotated or previewed what, when and why. The chain is checked
    first: a broken log is said so (on stderr, exit 1 after the lines)."""
    start = _since(since)
    with _opened() as store:
        report = store.admin.verify_audit()
        wanted = _subjects(store, patient, authority) if patient else None
        lines = store.admin.audit_lines()
    shown = [line for line in lines if _wanted(line, start, wanted, action)]
    for line in shown:
        typer.echo(json.dumps(_row(line)) if as_json else _text(line))
    if not report.ok:
        typer.echo(f"error: {_broken(report)}", err=True)
        raise typer.Exit(1)
    if not as_json:
        typer.echo(f"{len(shown)} of {report.lines} lines; chain intact, head {report.head}")


@audit_app.command("reanchor")
def audit_reanchor(
    reason: str = typer.Option(..., help="Why (the incident, the ticket); audited."),
    operator: str | None = typer.Option(None, help="Recorded in the audit log."),
) -> None:
    """Seal the audit log's head as it is now, after an incident is handled.

    Use it after `verify` found the anchor or the tail wrong: audit lines can then be
    appended again. The repair itself is an audit line (old and new head, the problem
    found); lost lines stay reported."""
    from service.commands.keys import _operator

    with _opened() as store:
        before = store.admin.reanchor_audit(operator=_operator(operator), reason=reason)
        after = store.admin.verify_audit()
    typer.echo(("was: " + _broken(before)) if not before.ok else "was: intact")
    typer.echo(f"anchored at head {after.head}" + ("" if after.ok else f"; {_broken(after)}"))
