"""`bosun` on a pseudo-terminal for one command that ends by itself (an install): everything it
wrote to the terminal, escapes included, is printed to stdout once it ends.

Usage: pty_install.py BOSUN WORKSPACE ARGS...
The environment (BOSUN_HOME, PATH) is passed on. Exits with bosun's status, or 1 with a reason
on stderr if it did not end within 120 s.
"""

import os
import sys
import time

from pty_terminal import Terminal

bosun, workspace, args = sys.argv[1], sys.argv[2], sys.argv[3:]
term = Terminal(bosun, workspace, args)
status = None
end = time.time() + 120
while time.time() < end:
    open_ = term.read_for(0.2)
    done, status = os.waitpid(term.pid, os.WNOHANG)
    if done:
        term.read_for(0.3)
        break
    if not open_:
        _, status = os.waitpid(term.pid, 0)
        break
else:
    os.kill(term.pid, 9)
    os.waitpid(term.pid, 0)
    sys.stderr.write("bosun did not end within 120 s\n")
    sys.stdout.write(term.seen.decode("utf-8", "replace"))
    sys.exit(1)
sys.stdout.write(term.seen.decode("utf-8", "replace"))
sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 2)
