"""The farm's domain services: what the API, the console and the tasks call to request, read,
cancel and finish renders and jobs. They decide; they do not run work.

| module | what |
|---|---|
| ``renders`` | ``RenderService``: dedup, credits, the chunk plan; the one place a render is born |
| ``lifecycle`` | ``RenderLifecycle``: every change of a render's status, each one transaction |
| ``graph`` | a render's job graph (asset import, chunks, stitch), built once |
| ``drafts`` | ``DraftService``: animated previews of unsaved values (360p streams, minutes, never renders) |
| ``jobs`` / ``videos`` | ``JobService`` (brand extraction, generation, stills, translated copies), ``Videos`` |
| ``resources`` | the Render and Job resources clients see |
| ``queues`` | the queue names and ``JobQueue``, the interface the runtime implements |
| ``progress`` | ``ProgressStore``: frames done, in Redis, the database or memory |
| ``assets`` / ``collaborators`` | remote assets a document names; the studio's parts a job uses |
| ``errors`` | what the services raise |

Nothing here imports ``reelfarm.farm.runtime`` (a test holds it).
"""
