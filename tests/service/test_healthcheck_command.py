"""`deidstream healthcheck` (the image's HEALTHCHECK, issue 29): it asks the port the settings
name, not 8080, and says in one line why it is unhealthy. Against a real HTTP server on a
free loopback port; the image test (tests/image/) runs it inside the container."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from service import cli
from service.commands.healthcheck import main, probe_url

ROOT = Path(__file__).resolve().parents[2]


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response({"/healthz": 200, "/readyz": 503}.get(self.path, 404))
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


def _run(port: int, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli.command(),
        ["healthcheck", *args],
        prog_name="deidstream",
        env={"DEIDSTREAM_HTTP_PORT": str(port), "DEIDSTREAM_HTTP_HOST": "0.0.0.0", **(env or {})},  # noqa: S104
    )
    return result.exit_code, result.output


def test_the_configured_port_is_probed(server: int) -> None:
    code, out = _run(server)
    assert code == 0, out
    assert out.strip() == f"healthy: http://127.0.0.1:{server}/healthz: 200"


def test_not_ready_is_unhealthy_with_the_status(server: int) -> None:
    code, out = _run(server, "--ready")
    assert code == 1 and out.strip() == f"unhealthy: http://127.0.0.1:{server}/readyz: 503"


def test_nothing_listening_is_unhealthy_not_a_traceback(server: int) -> None:
    closed = server + 1 if server < 65535 else server - 1
    code, out = _run(closed, "--timeout", "2")
    assert code == 1
    assert (
        out.startswith(f"unhealthy: http://127.0.0.1:{closed}/healthz: ") and "Traceback" not in out
    )


def test_the_settings_file_names_the_port(server: int, tmp_path: Path) -> None:
    config = tmp_path / "deidstream.toml"
    config.write_text(f'[deidstream]\nhttp_port = {server}\nhttp_host = "127.0.0.1"\n')
    result = CliRunner().invoke(
        cli.command(), ["healthcheck", "--config", str(config)], prog_name="deidstream", env={}
    )
    assert result.exit_code == 0, result.output


def test_a_bad_setting_is_one_line_and_status_2() -> None:
    code, out = _run(1, env={"DEIDSTREAM_HTTP_PORT": "eighty"})
    assert code == 2 and "http_port" in out and len(out.strip().splitlines()) == 1


def test_port_zero_has_nothing_to_probe() -> None:
    code, out = _run(0)
    assert code == 1 and "http_port is 0" in out


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:8081/healthz"),  # noqa: S104
        ("", "http://127.0.0.1:8081/healthz"),
        ("::", "http://[::1]:8081/healthz"),
        ("10.1.2.3", "http://10.1.2.3:8081/healthz"),
        ("fd00::5", "http://[fd00::5]:8081/healthz"),
    ],
)
def test_every_interface_is_probed_on_loopback(host: str, url: str) -> None:
    assert probe_url(host, 8081, ready=False) == url


def test_the_light_entry_point_the_image_uses(
    server: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEIDSTREAM_HTTP_PORT", str(server))
    monkeypatch.setenv("DEIDSTREAM_HTTP_HOST", "127.0.0.1")
    assert main([]) == 0
    assert main(["--ready"]) == 1
    assert main(["--port"]) == 2
    monkeypatch.setenv("DEIDSTREAM_HTTP_PORT", "-1")
    assert main([]) == 2
    out = capsys.readouterr().out
    assert "readyz: 503" in out and "usage:" in out


def test_python_dash_m_runs_it(server: int) -> None:
    """What the Dockerfile's HEALTHCHECK runs, as a process."""
    proc = subprocess.run(
        [sys.executable, "-m", "service.commands.healthcheck"],
        env={"DEIDSTREAM_HTTP_PORT": str(server), "PATH": "/usr/bin:/bin"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"healthy: http://127.0.0.1:{server}/healthz: 200"
