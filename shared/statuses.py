"""Every status vocabulary of the domain, and the subsets that mean something, defined once.

The tables' CHECK constraints (``reelfarm.shared.tables``), the repositories, the lifecycles,
the API's schemas and the console's pages all read them from here; this module imports nothing,
so views, which may not import the tables, may import it.
"""
from __future__ import annotations

VIDEO_STATUSES = ("draft", "generating", "ready", "failed", "archived")
# a video being written by a job (generation, translation): not yet editable or renderable
VIDEO_IN_THE_MAKING = ("generating", "draft")

JOB_STATUSES = ("queued", "running", "succeeded", "failed", "canceled")
RENDER_STATUSES = JOB_STATUSES
DRAFT_STATUSES = JOB_STATUSES
LIVE = ("queued", "running")  # a job, render or draft still at work
ENDED = ("succeeded", "failed", "canceled")  # ... and one that is not, for good
ACTIVE_RENDER_STATUSES = ("queued", "running", "succeeded")  # a render that holds (or will hold) a result

# a task on the embedded queue (``reelfarm.farm.runtime.embedded``)
TASK_STATUSES = ("deferred", "queued", "running", "succeeded", "failed", "canceled")

# a webhook delivery
DELIVERY_STATES = ("pending", "succeeded", "failed", "gave_up")
