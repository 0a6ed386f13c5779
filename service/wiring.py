"""Builds the real processor for the runner: key store + policy + pipeline.

Kept apart from the runner so the runner can be tested with any object that has
``process(raw, *, content_hint, now)`` (see ``service.runner.Processor``).
"""

from __future__ import annotations

import importlib
from typing import Any

from service.metrics import Metrics
from service.runner import Processor, ProcessorFactory
from service.settings import Settings


class InstrumentedStore:
    """Wraps a key store: every public method call is counted and timed in the metrics.

    Written by hand (a dozen lines): a generic proxy so any store implementation — SQLite,
    PostgreSQL, in-memory — is measured the same way without touching keystore/.
    """

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr
        metrics = self._metrics

        def timed(*args: Any, **kwargs: Any) -> Any:
            with metrics.keystore_timer(name):
                return attr(*args, **kwargs)

        return timed


def open_keystore(settings: Settings) -> Any:
    """The encrypted key store named by the settings (or the keystore package's local
    default when no URL is configured)."""
    import os

    from keystore.config import ENV_URL, default_store_from_env
    from keystore.keyring import ENV_KEY

    environ = dict(os.environ)
    if settings.keystore_url:
        environ[ENV_URL] = settings.keystore_url
    if settings.master_key is not None:
        environ[ENV_KEY] = settings.master_key.get_secret_value()
    return default_store_from_env(environ)


def real_processor_factory(settings: Settings, metrics: Metrics) -> ProcessorFactory:
    """A factory (run on the runner's worker thread) for the real pipeline."""

    def build() -> Processor:
        from pipelines.policy import Policy
        from pipelines.process import Processor as RealProcessor

        store = InstrumentedStore(open_keystore(settings), metrics)
        policy = Policy.load(settings.policy_file)
        return RealProcessor(policy=policy, store=store)

    return build


def processor_factory_for(settings: Settings, metrics: Metrics) -> ProcessorFactory:
    """``settings.processor`` ("module:function") if set, else the real pipeline."""
    if settings.processor:
        module_name, _, func = settings.processor.partition(":")
        module = importlib.import_module(module_name)
        made: ProcessorFactory = getattr(module, func or "factory")(settings, metrics)
        return made
    return real_processor_factory(settings, metrics)
