"""The farm's runtime: what executes work and keeps the farm healthy. It calls the services
(``reelfarm.farm.services``); they never call it.

| module | what |
|---|---|
| ``queue`` / ``embedded`` / ``taskprocess`` / ``rqnode`` | ``RQQueue`` (Redis) and ``EmbeddedQueue`` (the database and a process pool, whose processes ``taskprocess`` sets up); RQ's worker and job classes |
| ``tasks`` / ``studio_tasks`` | the job functions (``render_chunk``, ``stitch``, ``render_stills``, ``extract_brand``, ``generate_video``) |
| ``draft_tasks`` | ``draw_draft_chunk``: one chunk of an animated preview of unsaved values |
| ``context`` | the task context: what a task needs besides its arguments, one per process |
| ``routing`` / ``nodes`` | which queue a chunk goes to, from the live nodes' heartbeats |
| ``maintenance`` / ``reaper`` / ``reconcile`` / ``retention`` / ``webhooks`` | the maintenance round: repairs, stalled work, lost queue entries, old files, webhook delivery |
| ``resilience`` / ``scratch`` / ``metrics`` / ``status`` | outages waited out, scratch folders, node metrics, ``reelfarm farm status`` |
| ``worker`` / ``cli`` / ``wiring`` | ``reelfarm worker``, ``reelfarm farm ...``, and building all of it from ``Settings`` |
"""
