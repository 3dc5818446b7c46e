"""Releases as the engine published them (``CoreRelease``: values, intervals, provenance), for
tests that check an export or a provenance against the release itself. dpframe keeps no
"last release" of a session (results carry their own provenance); tests record the releases
where the engine publishes them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from dpframe.core.apply import CoreRelease
from dpframe.engine import release as _release


class Published:
    """The releases published while recording, by session (the last one is ``last(s)``)."""

    def __init__(self) -> None:
        self.by_session: dict[int, list[CoreRelease]] = {}

    def last(self, session: Any) -> CoreRelease | None:
        """The last release ``session`` published, or None."""
        found = self.by_session.get(id(session))
        return found[-1] if found else None


@contextlib.contextmanager
def recording() -> Iterator[Published]:
    """Record every release published while open (wraps the engine's step 6b)."""
    published = Published()
    real = _release.publish

    def publish(session: Any, entry: int, release: CoreRelease, details: Any) -> None:
        real(session, entry, release, details)
        published.by_session.setdefault(id(session), []).append(release)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_release, "publish", publish)
        yield published
