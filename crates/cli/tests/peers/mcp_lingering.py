"""An MCP server (official Python SDK) that tries to outlive the Bosun command that started it:
it ignores SIGTERM and the end of its input, and leaves a grandchild that has closed its pipes.
Both write their pid and TMPDIR to `lingering.txt` in the working directory and then touch
`heartbeat-<pid>` there every 100 ms, so a test can see whether they still run.

Usage: python mcp_lingering.py
Its tool: ping() -> "pong".
"""

import os
import signal
import sys
import time
from pathlib import Path

from mcp.server import MCPServer

app = MCPServer("lingering")


def note() -> None:
    with open("lingering.txt", "a") as out:
        out.write(f"{os.getpid()} {os.environ.get('TMPDIR', '')}\n")


def beat_forever() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while True:
        try:
            Path(f"heartbeat-{os.getpid()}").touch()
        except OSError:
            pass
        time.sleep(0.1)


@app.tool()
def ping() -> str:
    """Answers pong."""
    return "pong"


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        # The grandchild: no pipes of Bosun's, nothing to read an end of input from.
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        note()
        beat_forever()
    note()
    app.run("stdio")
    # End of input: keep going anyway.
    beat_forever()
