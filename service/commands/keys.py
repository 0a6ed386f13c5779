"""``deidstream keys …``: the privacy officer's commands (init, migrate, rotate, retire, forget,
reveal, stats).

The store comes from ``DEIDSTREAM_KEYSTORE_URL`` and the key from ``DEIDSTREAM_MASTER_KEY``
or ``DEIDSTREAM_MASTER_KEY_FILE``; with neither, a local SQLite store and key file under
``./.deidstream/`` (see :mod:`keystore.config`). Other commands reuse
:func:`default_store_from_env`.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

import typer

from keystore import Keyring, open_store
from keystore.admin import RotationReport
from keystore.api import PatientState
from keystore.config import default_store_from_env, resolve
from keystore.errors import DeidstreamError, RetireRefused
from keystore.forgetting import ReviewForget
from keystore.shred import DEFAULT_WAIT_S, Waiting, retire_old_keys, wait_for_instances
from keystore.store import EncryptedStore

__all__ = ["default_store_from_env", "register", "keys_app"]

keys_app = typer.Typer(
    name="keys", help="Master keys and the encrypted patient key store.", no_args_is_help=True
)


def _operator(value: str | None) -> str:
    if value:
        return value
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _nonblank(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("must say why (it is recorded in the audit log)")
    return value


def _safe_url(url: str) -> str:
    """The URL without any password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except DeidstreamError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(75 if exc.retriable else 1) from None


@contextmanager
def _store(keyring: Keyring | None = None) -> Iterator[EncryptedStore]:
    config, configured = resolve()
    if config.created_default:
        typer.echo(
            f"warning: created a local key store and master key under "
            f"{config.key_file.parent if config.key_file else '.deidstream'}",
            err=True,
        )
    store = open_store(config.url, keyring or configured)
    try:
        yield store
    finally:
        store.close()


@keys_app.command("init")
def init(
    print_key: bool = typer.Option(
        False,
        "--print-key",
        help="Only print a new key entry (id:base64) for a secret manager; touch nothing.",
    ),
) -> None:
    """Create the master key (if needed) and the store; print where they are."""
    if print_key:
        typer.echo(Keyring.generate().primary.entry())
        return
    with _errors():
        config, keyring = resolve()
        with open_store(config.url, keyring) as store:
            stats = store.stats()
        where = "environment" if config.keys_from_env else str(config.key_file)
        typer.echo(f"store: {_safe_url(config.url)}")
        typer.echo(f"master key: {keyring.primary.key_id} (from {where})")
        typer.echo(f"schema version: {stats['schema_version']}, patients: {stats['patients']}")


_WAIT = typer.Option(
    DEFAULT_WAIT_S,
    "--wait",
    min=0.0,
    help="Seconds to wait for live instances to seal with the new key before the old one "
    "is retired (an instance re-reads a changed key file at its heartbeat, every 10 s).",
)


@keys_app.command("rotate")
def rotate(
    generate: bool | None = typer.Option(
        None,
        "--generate/--no-generate",
        help="Generate a new master key first (default when keys come from a key file that "
        "holds one key). With keys from the environment, put the new key first there instead.",
    ),
    retire_old: bool = typer.Option(
        False,
        "--retire-old",
        help="Then retire the old keys and remove them from the key file (waits for live "
        "instances to pick up the new key); every earlier forget is final.",
    ),
    operator: str | None = typer.Option(None, help="Recorded in the audit log."),
    wait: float = _WAIT,
) -> None:
    """Re-wrap every data key under the first (new) master key."""
    with _errors():
        config, current = resolve(create=False)
        who = _operator(operator)
        if config.key_file is not None and retire_old:
            _retire_key_file(config.url, current, config.key_file, who, wait)
            return
        pending = config.key_file is not None and len(current) > 1
        target = _rotation_target(config.key_file, current, generate, pending)
        with open_store(config.url, current) as store:
            report = store.admin.rotate(target, operator=who)
            _print_rotation(report, current)
            if report.failed:
                typer.echo("error: some records could not be re-wrapped; old keys kept", err=True)
                raise typer.Exit(1)
            if retire_old:  # keys from the environment
                _retire_env(store, target, report.new_key_id, who, wait)
            elif pending:
                typer.echo(
                    f"a rotation is pending ({len(target)} keys in the key file): "
                    "`deidstream keys rotate --retire-old` finishes it"
                )
            elif len(target) > 1:
                typer.echo(
                    "old keys still decrypt; retire them once every instance uses the new "
                    "key (--retire-old, or `keys retire KEY_ID`)"
                )


def _rotation_target(
    key_file: Path | None, current: Keyring, generate: bool | None, pending: bool
) -> Keyring:
    """The keyring to rotate to: a new key first (saved first in the key file, before any
    record depends on it) when asked or by default with a one-key file, else ``current``."""
    make_new = (key_file is not None and not pending) if generate is None else generate
    if not make_new:
        return current
    if key_file is None:
        typer.echo(
            "error: keys come from DEIDSTREAM_MASTER_KEY; generate one with "
            "`deidstream keys init --print-key`, put it first, then rotate",
            err=True,
        )
        raise typer.Exit(2)
    if pending:
        typer.echo(
            f"error: the key file holds {len(current)} keys: a rotation is pending; "
            "finish it with `deidstream keys rotate --retire-old` (it adds no key "
            "while one is pending)",
            err=True,
        )
        raise typer.Exit(2)
    target = Keyring.generate().merged_with(current)
    target.write_file(key_file, overwrite=True)
    return target


def _print_rotation(report: RotationReport, current: Keyring) -> None:
    figures = (
        f"re-wrapped {report.rewrapped}, already current "
        f"{report.already_current}, review blobs re-wrapped "
        f"{report.review_rewrapped}, failed {len(report.failed)}"
    )
    if report.new_key_id != current.primary.key_id:
        typer.echo(f"new master key: {report.new_key_id} (was {current.primary.key_id}); {figures}")
        return
    typer.echo(f"no new master key: {report.new_key_id} is still the primary key; {figures}")
    if len(current) == 1:
        typer.echo(
            "to rotate, put a new key (`deidstream keys init --print-key`)"
            " first in DEIDSTREAM_MASTER_KEY, keep the old one after it, "
            "and run this again"
        )


def _retire_key_file(url: str, current: Keyring, key_file: Path, who: str, wait: float) -> None:
    """``rotate --retire-old`` with a key file: finish a pending rotation, then a new key,
    live instances waited for, the old keys retired and removed from the file."""
    with open_store(url, current) as store:
        try:
            done = retire_old_keys(store, key_file, operator=who, waiting=Waiting(wait))
        except RetireRefused as exc:
            typer.echo(
                f"error: cannot retire master key: {exc}; old keys kept in the key file "
                "(run this again: it finishes the pending rotation, adding no key)",
                err=True,
            )
            raise typer.Exit(1) from None
    _print_rotation(done.rotation, current)
    typer.echo(
        f"retired and removed from the key file: {', '.join(done.destroyed) or 'none'}; "
        "old keys removed from the key file; every earlier forget is final once no other "
        "copy of them exists"
    )


def _retire_env(store: EncryptedStore, target: Keyring, keep: str, who: str, wait: float) -> None:
    """``rotate --retire-old`` with keys from the environment: wait for the instances (they
    are restarted with the new key first), re-wrap what they sealed meanwhile, retire."""
    old = [k for k in target.key_ids if k != keep]
    try:
        wait_for_instances(store, old, Waiting(wait))
    except RetireRefused as exc:
        typer.echo(f"error: cannot retire master key: {exc}; old keys kept", err=True)
        raise typer.Exit(1) from None
    if store.admin.rotate(target, operator=who).failed:
        typer.echo("error: some records could not be re-wrapped; old keys kept", err=True)
        raise typer.Exit(1)
    _retire(store, old, who)
    store.admin.check_retirable(old)
    store.admin.record_key_retirement(old, operator=who, destroyed=False)
    typer.echo(
        "old keys retired: remove them from DEIDSTREAM_MASTER_KEY (and every "
        "secret-manager version); earlier forgets are final then"
    )


def _retire(store: EncryptedStore, key_ids: list[str], operator: str) -> None:
    """Retire each key in the store, or stop at the first refusal (the key file is then
    left as it is: every key in it still decrypts)."""
    for key_id in key_ids:
        try:
            store.admin.retire_key(key_id, operator=operator)
        except RetireRefused as exc:
            typer.echo(f"error: cannot retire master key {key_id}: {exc}; old keys kept", err=True)
            raise typer.Exit(1) from None
        typer.echo(f"retired master key {key_id}: nothing can be wrapped under it any more")


@keys_app.command("migrate")
def migrate(
    grant_to: str | None = typer.Option(
        None,
        "--grant-to",
        help="PostgreSQL: then grant the service role (DML only, no DDL) what it needs.",
    ),
) -> None:
    """Create or upgrade the store's schema and tables (run as the role that owns them)."""
    with _errors():
        config, keyring = resolve()
        with open_store(config.url, keyring, migrate=True) as store:
            typer.echo(f"store: {_safe_url(config.url)}; schema version {store.schema_version}")
            if grant_to:
                for statement in store.admin.grant_service(grant_to):
                    typer.echo(statement)


@keys_app.command("retire")
def retire(
    key_id: str = typer.Argument(..., help="The master key id to retire."),
    operator: str | None = typer.Option(None, help="Recorded in the audit log."),
) -> None:
    """Retire a master key: refused while a live instance seals with it or anything is
    still wrapped under it; afterwards nothing can be wrapped under it again."""
    with _errors(), _store() as store:
        _retire(store, [key_id], _operator(operator))


def _nothing_done(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


@keys_app.command("forget")
def forget(
    patient: str = typer.Argument(
        ...,
        help="Patient id as the feed sends it (an MRN), or "
        "Patient/<pseudonym> from the research output.",
    ),
    authority: str | None = typer.Option(
        None,
        help="Assigning authority of the patient id (default: search every authority; "
        "several matches must be told apart with this).",
    ),
    reason: str = typer.Option(
        ..., help="Why (the request, its ticket): audited; no PHI.", callback=_nonblank
    ),
    operator: str | None = typer.Option(None, help="Recorded in the audit log."),
    now: bool = typer.Option(
        False,
        "--now",
        help="Make it final now, backups included: new master key, every live record "
        "re-wrapped, old keys removed from the key file (as `rotate --retire-old`).",
    ),
    wait: float = _WAIT,
) -> None:
    """Crypto-shred one patient: their mapping can never be read again.

    Documents of this patient that arrive later get a NEW identity (new pseudonym, new
    date shift, new surrogates), unlinked to the forgotten one. Exit 1 if nothing was
    forgotten, 2 if the id exists under several authorities and none was given.
    Copies made earlier (backups, database WAL) stay readable with the current master
    keys until those are destroyed: `--now`, or the next `keys rotate --retire-old`
    (docs/keystore.md, "When a forget is final").
    """
    key_file = _key_file_for_now() if now else None
    with _errors(), _store() as store:
        if patient.startswith(PATIENT_PREFIX):
            found = store.admin.reveal(
                patient.removeprefix(PATIENT_PREFIX),
                operator=_operator(operator),
                reason=reason or "forget",
            )
            authority, patient = found.authority, found.patient_id
        if authority is None:
            matches = store.admin.find_patient(patient)
            if not matches:
                _nothing_done("no patient with this id under any authority (nothing forgotten)")
            if len(matches) > 1:
                names = ", ".join(repr(m.authority) for m in matches)
                typer.echo(
                    f"error: this id exists under {len(matches)} authorities ({names}); "
                    "say which with --authority",
                    err=True,
                )
                raise typer.Exit(2)
            authority = matches[0].authority
        deleted = store.admin.forget(
            authority, patient, operator=_operator(operator), reason=reason
        )
        _print_review_forget(store.admin.last_review_forget)
        try:
            done = (
                None
                if key_file is None
                else retire_old_keys(
                    store, key_file, operator=_operator(operator), waiting=Waiting(wait)
                )
            )
        except RetireRefused as exc:
            typer.echo(
                ("forgotten" if deleted else "nothing forgotten") + f", but not final: {exc}",
                err=True,
            )
            raise typer.Exit(1) from None
    if done is not None:
        typer.echo(
            f"forgotten (authority {authority!r})"
            if deleted
            else f"no patient with this id under authority {authority!r}; earlier forgets:"
        )
        typer.echo(
            f"final: every live record re-wrapped under {done.new_key_id}; destroyed "
            f"{', '.join(done.destroyed) or 'no older key'}"
        )
        return
    if not deleted:
        _nothing_done(f"no patient with this id under authority {authority!r} (nothing forgotten)")
    typer.echo(f"forgotten (authority {authority!r})")


def _print_review_forget(removed: ReviewForget) -> None:
    if removed.total():
        typer.echo(
            f"removed {removed.items} review items, {removed.decisions} decisions, "
            f"{removed.list_entries + removed.site_entries} list entries, "
            f"{removed.marks} version marks; "
            f"{removed.documents} held documents marked forgotten"
        )


def _key_file_for_now() -> Path:
    """The key file --now rewrites; with keys from the environment, how to do it by hand."""
    with _errors():
        config, _ = resolve(create=False)
    if config.key_file is None:
        typer.echo(
            "error: keys come from DEIDSTREAM_MASTER_KEY: forget without --now, put a "
            "new key first on every instance, run `keys rotate`, then destroy the old "
            "keys; the forget is final then",
            err=True,
        )
        raise typer.Exit(2)
    return config.key_file


PATIENT_PREFIX = "Patient/"
ENCOUNTER_PREFIX = "Encounter/"


def visit_candidates(state: PatientState) -> list[str]:
    """Visit ids a patient's sealed state knows: the visits of its documents (ADT, ORU, MDM,
    FHIR), identifiers from its ADT context (visit and account numbers) and the original
    identifiers its id map replaced."""
    from pipelines.patient_context import context_of, visits_of

    out: list[str] = list(visits_of(state))
    context = context_of(state)
    if context is not None:
        out.extend(i.value for i in context.other_ids)
        out.extend(context.account_numbers)
        out.extend(i.value for i in context.patient_ids)
    out.extend(state.id_map)
    return list(dict.fromkeys(v for v in out if v))


@keys_app.command("reveal")
def reveal(
    pseudonym: str = typer.Argument(
        ...,
        help="A pseudonym from the research output: Patient/<id> or <id> as "
        "subject.reference carries it, or Encounter/<id> for a visit.",
    ),
    reason: str = typer.Option(..., help="Authorization (e.g. IRB protocol); audited."),
    operator: str | None = typer.Option(None, help="Recorded in the audit log."),
) -> None:
    """Authorized re-identification of a patient or visit pseudonym (audited, needs the
    master key). Prints JSON; exit 1 if the pseudonym is not in this store."""
    with _errors(), _store() as store:
        if pseudonym.startswith(ENCOUNTER_PREFIX):
            identity, visit = store.admin.reveal_visit(
                pseudonym.removeprefix(ENCOUNTER_PREFIX),
                visit_candidates,
                operator=_operator(operator),
                reason=reason,
            )
            typer.echo(
                json.dumps(
                    {
                        "authority": identity.authority,
                        "patient_id": identity.patient_id,
                        "visit_id": visit,
                    }
                )
            )
            return
        identity = store.admin.reveal(
            pseudonym.removeprefix(PATIENT_PREFIX).strip(),
            operator=_operator(operator),
            reason=reason,
        )
    typer.echo(json.dumps({"authority": identity.authority, "patient_id": identity.patient_id}))


# an instance whose heartbeat is older than this counts as gone (as `keys retire` judges)
LIVE_WITHIN_S = 60.0


def _age(seconds: float) -> str:
    """``12 s``, ``5 min``, ``3 h``, ``2 d`` ago."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def instance_lines(
    instances: list[dict[str, Any]], *, now: float, own: str, show_all: bool
) -> list[str]:
    """One line per instance (live ones: a heartbeat in the last minute; all with
    ``show_all``), its heartbeat's age; this command's own registration left out."""
    lines = []
    stale = 0
    for inst in instances:
        if inst["instance"] == own:
            continue
        age = now - float(inst["heartbeat_at"])
        live = age <= LIVE_WITHIN_S
        stale += not live
        if live or show_all:
            state = "" if live else " (not live)"
            lines.append(
                f"instance:          {inst['instance']} seals with {inst['key_id']}, "
                f"heartbeat {_age(age)} ago{state}"
            )
    if not lines and not stale:
        lines.append("instances:         none live")
    elif not show_all and stale:
        lines.append(f"not live:          {stale} instances (--all-instances lists them)")
    return lines


@keys_app.command("stats")
def stats(
    as_json: bool = typer.Option(
        False, "--json", help="Every figure, as JSON (cache and mark counters too)."
    ),
    all_instances: bool = typer.Option(
        False,
        "--all-instances",
        help="Also list instances with no heartbeat in the last minute (stopped or gone).",
    ),
) -> None:
    """Patients, forgotten patients, master keys in use, the last rotation, live instances."""
    import time

    with _errors(), _store() as store:
        officer = store.admin.officer_stats()
        usage = store.stats()
        own = store.instance_id
        figures = {**usage, **officer} if as_json else officer
    if as_json:
        json.dump(figures, sys.stdout, indent=2, sort_keys=True)
        typer.echo("")
        return
    last = officer["last_rotation"]
    by_key = officer["records_by_key"]
    assert isinstance(by_key, dict)  # noqa: S101 - shape of officer_stats
    typer.echo(f"patients:          {officer['patients']}")
    typer.echo(f"forgotten:         {officer['forgotten']}")
    if officer["forgets_not_final"]:
        typer.echo(
            f"not yet final:     {officer['forgets_not_final']} forgets (old copies "
            "open with the current keys until `keys rotate --retire-old`)"
        )
    typer.echo(f"primary key:       {officer['primary_key_id']}")
    in_use = ", ".join(f"{k} ({by_key.get(k, 0)} records)" for k in officer["keys_in_use"])  # type: ignore[attr-defined]
    typer.echo(f"keys in use:       {in_use or 'none'}")
    typer.echo(f"configured keys:   {', '.join(officer['configured_key_ids'])}")  # type: ignore[arg-type]
    if isinstance(last, dict):
        typer.echo(
            f"last rotation:     {last['at']} to {last['new_key_id']} by "
            f"{last['operator']} ({last['outcome']})"
        )
    else:
        typer.echo("last rotation:     never")
    retired = usage.get("retired_keys") or []
    typer.echo(f"retired keys:      {', '.join(map(str, retired)) or 'none'}")  # type: ignore[call-overload]
    raw = usage.get("instances")
    instances = list(raw) if isinstance(raw, list) else []
    for line in instance_lines(instances, now=time.time(), own=own, show_all=all_instances):
        typer.echo(line)


from service.commands.audit import audit_app  # noqa: E402 - uses this module's helpers

keys_app.add_typer(audit_app, name="audit")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
