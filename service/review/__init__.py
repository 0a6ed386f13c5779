"""The review workbench in the service: intake from the held topic, the web pages, login."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from service.settings import Settings


@dataclass
class Workbench:
    """The review queue, its detector and its intake loop, as the app runs them."""

    settings: Settings
    queue: Any  # pipelines.review.ReviewQueue
    detector: Any  # pipelines.phi.detector.Detector with the queue's lists
    throttle: Any = None  # service.review.auth.LoginThrottle of the sign-in page
    _task: asyncio.Task[None] | None = field(default=None, repr=False)

    def start(self) -> None:
        from service.review.intake import loop

        if self.settings.review_sync_seconds > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                loop(self.settings, self.queue, self.detector)
            )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await asyncio.to_thread(self.queue.store.close)


def mount(app: Any, settings: Settings) -> Workbench:
    """Open the queue on the key store and add the /review pages to ``app``."""
    from pipelines.phi.detector import Detector
    from pipelines.policy import Policy
    from pipelines.review import ReviewQueue
    from service.review.auth import LoginThrottle
    from service.review.intake import settle
    from service.review.web import build_router
    from service.wiring import open_keystore

    queue = ReviewQueue(open_keystore(settings), reviews_per_item=settings.review_reviews_per_item)
    detector = Detector(Policy.load(settings.policy_file), lists=queue.lists)
    throttle = LoginThrottle()
    app.include_router(
        build_router(settings, queue, lambda docs: settle(settings, queue, docs), throttle)
    )
    return Workbench(settings, queue, detector, throttle)
