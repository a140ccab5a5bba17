"""`bosun` on a pseudo-terminal for one command that ends by itself (an install): everything it
wrote to the terminal, escapes included, is printed to stdout once it ends.

Usage: pty_install.py BOSUN WORKSPACE ARGS...
The environment (BOSUN_HOME, PATH) is passed on. Exits with bosun's status, or 1 with a reason
on stderr if it did not end within 120 s.
"""

import sys

from pty_terminal import Terminal

bosun, workspace, args = sys.argv[1], sys.argv[2], sys.argv[3:]
Terminal(bosun, workspace, args).finish(120)
