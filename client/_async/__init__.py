"""The SDK written once, awaited. ``../_sync`` is generated from these files by ``scripts/generate_sync.py``
(``async``/``await`` dropped, ``Async*`` names made plain); only ``io.py`` is written by hand on each side."""
