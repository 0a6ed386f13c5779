"""Options several commands take alike, one ``Annotated`` alias each, so the flag, its help
and its checks read the same in every command (``detect``, ``deidentify``, ``export``,
``evaluate``, ``train``; the broker and settings-file options of ``run``, ``mllp``,
``replay``, ``tail`` and ``held``). A command whose option differs (its own help text, another flag)
keeps its own; ``--known-names FILE`` keeps each command's help through
:func:`known_names_file`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pipelines.corpus_formats import CorpusFormat

FORMAT_HELP = (
    "Corpus layout: physionet (id.text + id-phi.phrase), brat (.txt + .ann), i2b2 (2014 XML),"
    " jsonl; auto sniffs the directory / file."
)

PolicyFile = Annotated[
    Path | None,
    typer.Option(
        "--policy",
        help="Policy TOML (default: the packaged policy).",
        exists=True,
        dir_okay=False,
    ),
]

Authority = Annotated[
    str,
    typer.Option("--authority", help="Assigning authority of the patient ids in the key store."),
]

CorpusLayout = Annotated[CorpusFormat, typer.Option("--format", help=FORMAT_HELP)]

BootstrapServers = Annotated[
    str | None, typer.Option(help="Overrides DEIDSTREAM_BOOTSTRAP_SERVERS")
]

ConfigFile = Annotated[
    Path | None, typer.Option("--config", "-c", help="TOML, JSON or .env settings file")
]


def known_names_file(help_text: str) -> Any:
    """``--known-names FILE``: an existing pid_patientname.txt; ``help_text`` says what the
    command does with it."""
    return typer.Option("--known-names", help=help_text, exists=True, dir_okay=False)
