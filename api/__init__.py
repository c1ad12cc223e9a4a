"""reelfarm's HTTP API: flask-smorest views over the services; thin by design.

The app factory is ``reelfarm.api.app.create_app`` (``reelfarm.app.create_app`` adds the console).
Nothing is imported here: ``reelfarm admin ...`` and ``reelfarm migrate`` import ``reelfarm.api.cli``
and should not load the web framework and every view to print their help.
"""
