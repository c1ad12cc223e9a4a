"""reelfarm's render farm: queues, tasks, progress, render and job services, worker nodes.

- ``farm.renders.RenderService`` and ``farm.jobs.JobService``: what the API calls (with
  ``farm.videos.Videos`` in front of videos); ``farm.resources``: the Render and Job resources.
- ``farm.queue.JobQueue`` with ``RQQueue`` (Redis) and ``farm.embedded.EmbeddedQueue`` (the
  database and a process pool; the embedded default).
- ``farm.progress.ProgressStore`` with ``RedisProgress``, ``DatabaseProgress``, ``MemoryProgress``.
- ``farm.context``: the task context (a leaf: it imports no farm module); ``farm.tasks`` and
  ``farm.studio_tasks``: the job functions (``render_chunk``, ``stitch``, ``render_stills``,
  ``extract_brand``, ``generate_video``); ``farm.collaborators``: the studio's parts they use.
- ``farm.maintenance``: the one maintenance round (repairs, reaping, webhooks, retention).
- ``farm.worker`` / ``farm.cli``: ``reelfarm worker`` and ``reelfarm farm status|reap``.
- ``farm.wiring``: builds all of it from ``Settings``.

Errors: ``farm.errors``.
"""
