"""The command's process: ``python -m elitr_core`` and the installed ``elitr`` script
(pyproject's ``[project.scripts]``) both run :func:`script`."""

import logging
import os
import sys


def script() -> None:
    """Run the command line in this process and leave it with the command's status."""
    # httpcore (under openai's client) imports trio when it is installed, to support trio event
    # loops; this process runs asyncio only, and trio is there only as a test tool's dependency
    # (selenium). Marked absent here, in the command's own process (never in a test process
    # that may run selenium), it saves 0.17 s before a run's first request.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]

    from elitr_core.cli.main import main

    status = main()
    # When main() returns, everything the command wrote is committed and closed (the batch
    # writer's thread is joined, files are closed). Python's own teardown of the ~2,000 modules
    # a run imports (openai's pydantic models, SQLAlchemy) then took 0.4-0.5 s after the last
    # answer was stored: the streams and log handlers are flushed and the process leaves at once.
    logging.shutdown()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # main() reported a full disk or closed pipe already
        pass
    os._exit(status)
