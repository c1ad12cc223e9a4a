"""reelfarm's render farm, in two rooms:

- ``reelfarm.farm.services``: the domain services the API, the console and the tasks call
  (renders, their lifecycle and job graph, jobs, videos, progress); they decide and never run work.
- ``reelfarm.farm.runtime``: what runs the work (queues, tasks, worker nodes, routing, maintenance,
  reconciliation); it may import the services, never the other way round.
"""
