"""The demo server, except that it outlives the end of its stdin (as some real servers do).

Only a signal stops it, so a test that finds it gone after its client's
process ended knows the client closed it (``Client.close`` sends SIGTERM),
not that it noticed EOF by itself.  Run: ``python tests/servers/stubborn_server.py``.
"""

from __future__ import annotations

import threading

from mcpsync.demo import build_server

if __name__ == "__main__":
    build_server().run_stdio()
    threading.Event().wait()  # EOF on stdin is not a reason to exit here
