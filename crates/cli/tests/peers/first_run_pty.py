"""Drives `bosun` with no model configured in a pseudo-terminal, as a new user would.

Usage: first_run_pty.py BOSUN WORKSPACE ANSWER EXPECTED
With ANSWER `y` or `n` it waits for the first run's question and answers it; with `-` it expects
no question. Then it types a task, waits for EXPECTED on screen and leaves with Ctrl-C. Prints
everything the terminal showed to stdout and exits 1 with a reason on stderr if a step did not
happen in time.
"""

import os
import pty
import re
import select
import struct
import sys
import fcntl
import termios
import time

bosun, workspace, answer, expected = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(workspace)
    os.environ["TERM"] = "xterm-256color"
    os.execv(bosun, [bosun])

fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
seen = b""
ESCAPE = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


def read_for(seconds):
    global seen
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            seen += chunk
    return True


def wait_for(text, seconds, what):
    end = time.time() + seconds
    needle = re.sub(r"\s", "", text).encode()
    while needle not in re.sub(rb"\s", b"", ESCAPE.sub(b"", seen)):
        if time.time() > end or not read_for(0.1):
            sys.stdout.buffer.write(seen)
            sys.stderr.write(f"no {what} ({text!r}) within {seconds} s\n")
            sys.exit(1)


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
        sys.stdout.buffer.write(seen)
        sys.stderr.write("bosun did not leave after ten Ctrl-C presses and 20 s\n")
        sys.exit(1)
read_for(0.5)
sys.stdout.buffer.write(seen)
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 2)
