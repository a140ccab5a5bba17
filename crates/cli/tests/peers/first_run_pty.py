"""Drives `bosun` with no model configured in a pseudo-terminal, as a new user would.

Usage: first_run_pty.py BOSUN WORKSPACE ANSWER EXPECTED [TRUST]
It first answers the question about the folder with TRUST (`y` unless given; `-`: no question
expected). With ANSWER `y` or `n` it waits for the first run's question about a model and
answers it; with `-` it expects no question. Then it types a task, waits for EXPECTED on screen
and leaves with Ctrl-C. Prints everything the terminal showed to stdout and exits 1 with a
reason on stderr if a step did not happen in time.
"""

import os
import sys
import time

from pty_terminal import Terminal

bosun, workspace, answer, expected = sys.argv[1:5]
trust = sys.argv[5] if len(sys.argv) > 5 else "y"
term = Terminal(bosun, workspace)
read_for, wait_for = term.read_for, term.wait_for
pid, fd = term.pid, term.fd
if trust != "-":
    term.answer_trust(trust)


if answer != "-":
    wait_for("as the default model? [Y/n]", 30, "first-run question")
    os.write(fd, (answer + "\r").encode())
wait_for("Type a task", 30, "start screen")
os.write(fd, b"Hello.\r")
wait_for(expected, 60, "answer")
status = None
for _ in range(10):
    try:
        os.write(fd, b"\x03")
    except OSError:
        pass
    read_for(0.3)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    end = time.time() + 20
    while time.time() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        read_for(0.2)
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        term.dump()
        sys.stderr.write("bosun did not leave after ten Ctrl-C presses and 20 s\n")
        sys.exit(1)
read_for(0.5)
term.dump()
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 2)
