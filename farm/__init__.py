"""reelfarm's render farm: queues, tasks, progress, render and job services, worker nodes.

- ``reelfarm.farm.renders.RenderService`` and ``reelfarm.farm.jobs.JobService``: what the API calls (with
  ``reelfarm.farm.videos.Videos`` in front of videos); ``reelfarm.farm.resources``: the Render and Job resources.
- ``reelfarm.farm.queue.JobQueue`` with ``RQQueue`` (Redis) and ``reelfarm.farm.embedded.EmbeddedQueue`` (the
  database and a process pool; the embedded default).
- ``reelfarm.farm.progress.ProgressStore`` with ``RedisProgress``, ``DatabaseProgress``, ``MemoryProgress``.
- ``reelfarm.farm.context``: the task context (a leaf: it imports no farm module); ``reelfarm.farm.tasks`` and
  ``reelfarm.farm.studio_tasks``: the job functions (``render_chunk``, ``stitch``, ``render_stills``,
  ``extract_brand``, ``generate_video``); ``reelfarm.farm.collaborators``: the studio's parts they use.
- ``reelfarm.farm.maintenance``: the one maintenance round (repairs, reaping, webhooks, retention).
- ``reelfarm.farm.worker`` / ``reelfarm.farm.cli``: ``reelfarm worker`` and ``reelfarm farm status|reap``.
- ``reelfarm.farm.wiring``: builds all of it from ``Settings``.

Errors: ``reelfarm.farm.errors``.
"""
