"""``user_suite/`` is a user's test suite, run only by ``test_plugin.py`` in a child pytest
(where the plugin is installed); collected here it would have no ``nams_server`` fixture."""

collect_ignore = ["user_suite"]
