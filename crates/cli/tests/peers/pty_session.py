"""Drives the real `bosun` binary in a pseudo-terminal, as a person at a terminal would.

Usage: pty_session.py BOSUN WORKSPACE [typeahead]
The environment (BOSUN_HOME, PATH) is passed on. Types a task, waits for the approval box,
allows the call once, waits for the answer, then leaves with Ctrl-C. With `typeahead`, it
hammers answer keys from the moment the task is sent until the box is up, waits, then denies
the call with `d` and waits for the model's reply to the denial. Prints everything the
terminal showed (escape sequences included) to stdout, and exits 1 with a reason on stderr if
a step did not happen within its time.
"""

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time

bosun, workspace = sys.argv[1], sys.argv[2]
scenario = sys.argv[3] if len(sys.argv) > 3 else "allow"
pid, fd = pty.fork()
if pid == 0:
    os.chdir(workspace)
    os.environ["TERM"] = "xterm-256color"
    os.execv(bosun, [bosun])

fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
seen = b""


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


ESCAPE = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


def screen_text():
    """What was drawn, with escape sequences and spaces removed: ratatui moves the cursor
    between the cells it changes, so words on screen are not contiguous in the stream."""
    return re.sub(rb"\s", b"", ESCAPE.sub(b"", seen))


def wait_for(text, seconds, what):
    end = time.time() + seconds
    needle = re.sub(r"\s", "", text).encode()
    while needle not in screen_text():
        if time.time() > end or not read_for(0.1):
            sys.stdout.buffer.write(seen)
            sys.stderr.write(f"no {what} ({text!r}) within {seconds} s\n")
            sys.exit(1)


def send(data):
    os.write(fd, data.encode())


wait_for("Type a task", 30, "start screen")
# A bracketed paste, as a terminal sends it: it must not send anything by itself.
send("\x1b[200~Run echo\x1b[201~")
read_for(0.5)
send(" hi.\r")
if scenario == "typeahead":
    # Answer keys typed while the model still streams, up to the moment the box is drawn: none
    # of them was typed in answer to it.
    end = time.time() + 60
    needle = re.sub(r"\s", "", "[o]").encode()
    typed = 0
    while needle not in screen_text():
        if time.time() > end:
            sys.stdout.buffer.write(seen)
            sys.stderr.write("no approval box within 60 s\n")
            sys.exit(1)
        send("o" if int(time.time() * 10) % 2 else "y")
        typed += 1
        read_for(0.05)
    send("y")
    if typed < 3:
        sys.stdout.buffer.write(seen)
        sys.stderr.write(f"only {typed} keys were typed before the approval box: the model streamed too fast\n")
        sys.exit(1)
    # Well past the arming delay: the box must still be asking.
    read_for(1.5)
    if b"Itprintedhi." in screen_text():
        sys.stdout.buffer.write(seen)
        sys.stderr.write("keys typed before the approval box allowed the call\n")
        sys.exit(1)
    send("d")
    wait_for("Declined.", 60, "reply to the denial")
else:
    wait_for("[o]", 60, "approval box")
    # Keys typed before the box has been up long enough are ignored: wait, then allow once.
    read_for(0.8)
    send("o")
    wait_for("It printed hi.", 60, "answer")
# Leave with Ctrl-C. The answer can be on screen while the run is still winding down (saving
# the session, closing the trace), more so on a loaded machine: then the first press cancels
# the run, and leaving at the idle prompt takes two more. So press until it has left, as a
# person would, at most ten times; how many presses each state takes is unit-tested.
status = None
for _ in range(10):
    try:
        send("\x03")
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
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.stdout.buffer.write(seen)
        sys.stderr.write("bosun did not leave after ten Ctrl-C presses and 20 s\n")
        sys.exit(1)
read_for(0.5)
sys.stdout.buffer.write(seen)
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 2)
