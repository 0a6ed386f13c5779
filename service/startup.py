"""Start-up checks of the long-running commands (``run``, ``mllp``) and the broker clients
(``replay``, ``tail``): a mistake the operator can fix is one line on stderr and an exit,
not a retry loop that never ends nor a port that silently stays someone else's.

- A broker host that does not resolve (``kafak:9092``) is a typo: exit 2. A host that
  resolves but does not answer is an infrastructure fault: the commands retry, as before;
  a name server that cannot answer now (``EAI_AGAIN``) is one too.
- A listening port already in use: exit 1, saying so ("address already in use").
"""

from __future__ import annotations

import socket

import typer

# getaddrinfo's answers that mean "this name does not exist" (not "ask again later")
_NO_SUCH_HOST = frozenset(
    code
    for code in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
    if code is not None
)


def broker_addresses(bootstrap: str) -> list[tuple[str, int | None]]:
    """``host:port`` entries of a bootstrap list (``[v6]:port`` too; no port: None)."""
    out: list[tuple[str, int | None]] = []
    for entry in bootstrap.split(","):
        entry = entry.strip()
        if not entry:
            continue
        entry = entry.split("://", 1)[-1]  # PLAINTEXT://host:port
        host, sep, port = entry.rpartition(":")
        if not sep or "]" in port:  # no port given
            host, port = entry, ""
        host = host.strip("[]")
        out.append((host, int(port) if port.isdigit() else None))
    return out


def unresolvable_hosts(bootstrap: str) -> list[str]:
    """The broker host names that do not exist (a typo); empty when every one resolves or
    the answer is only "not now"."""
    missing = []
    for host, port in broker_addresses(bootstrap):
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            if exc.errno in _NO_SUCH_HOST:
                missing.append(host)
        except (UnicodeError, OSError):
            missing.append(host)
    return missing


def brokers_or_exit(bootstrap: str, command: str, *, option: bool = True) -> None:
    """Exit 2 with one line when a broker host of ``bootstrap`` does not resolve; the line
    names where the value comes from (``option``: the command has --bootstrap-servers)."""
    missing = unresolvable_hosts(bootstrap)
    if missing:
        names = ", ".join(repr(h) for h in missing)
        where = "--bootstrap-servers" if option else "the settings file"
        typer.echo(
            f"deidstream {command}: the Kafka broker host {names} does not resolve "
            f"(bootstrap servers {bootstrap}); check DEIDSTREAM_BOOTSTRAP_SERVERS or {where}",
            err=True,
        )
        raise typer.Exit(2)


def listen_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on now ("address already in use"), or None. Port
    0 (the OS picks one) is always free."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
            probe.bind((host, port))
    except OSError as exc:
        return (exc.strerror or type(exc).__name__).lower()
    return None


def port_or_exit(host: str, port: int, what: str, command: str) -> None:
    """Exit 1 with one line when ``host:port`` (``what``: the HTTP port…) is taken."""
    problem = listen_problem(host, port)
    if problem is not None:
        typer.echo(
            f"deidstream {command}: cannot listen on {host}:{port} ({what}): {problem}", err=True
        )
        raise typer.Exit(1)
