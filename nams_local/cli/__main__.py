"""``python -m nams_local.cli``: the same command as the ``nams-local`` script."""

from . import main

raise SystemExit(main())
