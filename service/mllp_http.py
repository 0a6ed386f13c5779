"""The MLLP gateway's HTTP port (``deidstream mllp --metrics-port``): ``/metrics`` (the
gateway's Prometheus registry) and ``/readyz`` (200 while the gateway listens with a
connected producer, else 503), like the service's own port; any other path is 404.

prometheus_client's ``start_http_server`` answered every path with the metrics text, so a
probe of ``/readyz`` read "ready" from a gateway that was not. One daemon thread
(prometheus_client's threading WSGI server), stopped with :meth:`MetricsServer.close`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer


def _text() -> list[tuple[str, str]]:
    """Fresh headers per response: wsgiref appends Content-Length to the list it is given."""
    return [("Content-Type", "text/plain; charset=utf-8")]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        """No access log (a scraper every few seconds)."""


def gateway_app(registry: CollectorRegistry, ready: Callable[[], bool]) -> Any:
    """The WSGI app: /metrics, /readyz (``ready()``), 404 for the rest."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/readyz":
            if ready():
                start_response("200 OK", _text())
                return [b"ready\n"]
            start_response("503 Service Unavailable", _text())
            return [b"not ready: the gateway is not listening (broker not reached yet)\n"]
        start_response("404 Not Found", _text())
        return [b"not found: this port serves /metrics and /readyz\n"]

    return app


class MetricsServer:
    """``gateway_app`` on ``host:port`` (0: the OS picks one) in a daemon thread."""

    def __init__(
        self, host: str, port: int, registry: CollectorRegistry, ready: Callable[[], bool]
    ) -> None:
        class Server(ThreadingWSGIServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self._server = make_server(
            host, port, gateway_app(registry, ready), Server, handler_class=_Quiet
        )
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="mllp-metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
