"""The task context: what a farm task needs besides its arguments, one per process.

Tasks run wherever the queue runs them (an RQ work horse, an embedded pool process, a test's
``SimpleWorker``) and take only ids and plain values; they find the database, storage, clock,
progress store and the studio's collaborators here, through ``current()``.

Whoever starts a process that runs tasks makes its context: the API (``reelfarm.farm.runtime.wiring.make_farm``),
``reelfarm worker`` and ``reelfarm farm reap`` call ``configure``; processes forked from them
inherit it. A process nobody configured builds one the first time a task asks, with the builder
handed in by ``set_builder`` (``reelfarm.farm.runtime.wiring`` hands in "from the environment's settings").

This module is a leaf: it imports no other farm module, so every farm module may import it.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from reelfarm.farm.services.collaborators import Collaborators
    from reelfarm.farm.services.progress import ProgressStore
    from reelfarm.renderer.backends import EncoderChoice, RasterChoice
    from reelfarm.shared.clock import Clock
    from reelfarm.shared.config import Settings
    from reelfarm.shared.storage import Storage


@dataclass
class TaskContext:
    """What a task needs besides its arguments.

    ``studio`` (the studio's collaborators: fetchers, moderation, writer, translators) is built
    on first use by ``studio_of`` with ``build_studio`` when it was not given. ``raster`` is the
    rasterizer this node chose for chunks (``reelfarm worker`` resolves and probes it once); when
    None, chunks resolve ``settings.raster`` (CPU without settings). ``encoder`` is the node's encoder
    family, chosen once at start the same way; when None, chunks encode with x264.
    ``frames_drawn`` is called with the frames a chunk draws as it draws them: on a farm node, its
    ``FrameCounter``, by which it stops a stuck chunk (``reelfarm.farm.runtime.nodehealth``).
    """

    engine: Engine
    storage: Storage
    clock: Clock
    progress: ProgressStore
    settings: Settings | None = None
    studio: Collaborators | None = None
    build_studio: Callable[[], Collaborators] | None = None
    raster: RasterChoice | None = None
    encoder: EncoderChoice | None = None
    frames_drawn: Callable[[int], None] | None = None


_CONTEXT: TaskContext | None = None
_BUILDER: Callable[[], TaskContext] | None = None
_FORK_HOOK = False


def configure(context: TaskContext) -> None:
    """Make ``context`` this process's task context (inherited by processes forked from it)."""
    global _CONTEXT, _FORK_HOOK
    _CONTEXT = context
    if not _FORK_HOOK:
        # A forked child must not use the parent's pooled database connections.
        os.register_at_fork(after_in_child=_after_fork)
        _FORK_HOOK = True


def set_builder(builder: Callable[[], TaskContext]) -> None:
    """How ``current()`` builds a context in a process that was never configured."""
    global _BUILDER
    _BUILDER = builder


def current() -> TaskContext:
    """The configured context; built with the handed-in builder the first time if none was set."""
    if _CONTEXT is None:
        if _BUILDER is None:
            raise RuntimeError("no task context: call reelfarm.farm.runtime.context.configure() (or set_builder()) first")
        configure(_BUILDER())
    assert _CONTEXT is not None
    return _CONTEXT


def studio_of(ctx: TaskContext) -> Collaborators:
    """The context's studio collaborators, built with its ``build_studio`` the first time."""
    if ctx.studio is None:
        if ctx.build_studio is None:
            raise RuntimeError("this task context has neither studio collaborators nor a way to build them")
        ctx.studio = ctx.build_studio()
    return ctx.studio


def _after_fork() -> None:
    if _CONTEXT is not None:
        _CONTEXT.engine.dispose(close=False)
