"""reelfarm's render farm: queues, tasks, progress, render and job services, worker nodes.

- ``farm.renders.RenderService`` and ``farm.jobs.JobService``: what the API calls.
- ``farm.queue.JobQueue`` with ``RQQueue`` (Redis) and ``farm.embedded.EmbeddedQueue`` (the
  database and a process pool; the embedded default).
- ``farm.progress.ProgressStore`` with ``RedisProgress``, ``DatabaseProgress``, ``MemoryProgress``.
- ``farm.tasks``: the job functions (``render_chunk``, ``stitch``, ``render_stills``).
- ``farm.worker`` / ``farm.cli``: ``reelfarm worker`` and ``reelfarm farm status``.
- ``farm.wiring``: builds all of it from ``Settings``.

Errors: ``farm.errors``.
"""
