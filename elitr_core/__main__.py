"""``python -m elitr_core``: the command line."""

import sys

# httpcore (under openai's client) imports trio when it is installed, to support trio event
# loops; this process runs asyncio only, and trio is there only as a test tool's dependency
# (selenium). Marked absent here, in the command's own process (never in a test process that
# may run selenium), it saves 0.17 s before a run's first request.
sys.modules.setdefault("trio", None)  # type: ignore[arg-type]

from elitr_core.cli.main import main  # noqa: E402

sys.exit(main())
