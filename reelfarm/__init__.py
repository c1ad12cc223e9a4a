"""reelfarm: one installed package whose subpackages are the parts of the service.

The parts live in top-level folders of the repository (``api/``, ``farm/``, ``renderer/``, ...;
``../DESIGN.md`` names what each is and which may import which). Users import one package,
``reelfarm.*``. The entries of this folder named in ``PARTS`` join the two: each is a relative
symbolic link, ``reelfarm/farm -> ../farm``, so ``reelfarm.farm`` is the ``farm/`` folder, with one
copy of every module, in a checkout and in an installed wheel alike (the build follows the links).
Nothing else is installed at the top level: ``import farm`` fails for a user, and in the tests too
(``tests/conftest.py``), so no module is loaded twice under two names.

``PARTS`` is the one list of them: the tests (``tests/unit/test_layout.py`` checks each link),
the queue's table of former top-level names (``reelfarm.farm.runtime.queue.FORMER_TOP_LEVEL``:
work queued by a release that had them still runs) and the deploy images' ``COPY`` lines are
derived from it or checked against it.

The modules here are the composition roots, above every part: ``app.py`` builds the app with the
API and the console on it, ``serve.py`` and ``cli.py`` the ``reelfarm`` command. No part imports
them (``tests/unit/test_import_graph.py``).
"""

PARTS = ("api", "client", "console", "farm", "renderer", "shared", "studio")
