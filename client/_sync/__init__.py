"""The blocking SDK, generated from ``../_async`` by ``scripts/generate_sync.py``; only ``io.py`` is written
here by hand. Edit the ``_async`` files and run the script; a test fails while the two differ."""
