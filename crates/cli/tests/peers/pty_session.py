"""Drives the real `bosun` binary in a pseudo-terminal, as a person at a terminal would.

Usage: pty_session.py BOSUN WORKSPACE [typeahead]
The environment (BOSUN_HOME, PATH) is passed on. Types a task, waits for the approval box,
allows the call once, waits for the answer, then leaves with Ctrl-C. With `typeahead`, it
hammers answer keys from the moment the task is sent until the box is up, waits, then denies
the call with `d` and waits for the model's reply to the denial. Prints everything the
terminal showed (escape sequences included) to stdout, and exits 1 with a reason on stderr if
a step did not happen within its time.
"""

import os
import re
import sys
import time

from pty_terminal import Terminal

bosun, workspace = sys.argv[1], sys.argv[2]
scenario = sys.argv[3] if len(sys.argv) > 3 else "allow"
term = Terminal(bosun, workspace)
read_for, screen_text, wait_for, send = term.read_for, term.screen_text, term.wait_for, term.send
pid, fd = term.pid, term.fd
# A folder Bosun has not run in: trusted, as a person starting in their project would.
term.answer_trust("y")


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
            term.dump()
            sys.stderr.write("no approval box within 60 s\n")
            sys.exit(1)
        send("o" if int(time.time() * 10) % 2 else "y")
        typed += 1
        read_for(0.05)
    send("y")
    if typed < 3:
        term.dump()
        sys.stderr.write(f"only {typed} keys were typed before the approval box: the model streamed too fast\n")
        sys.exit(1)
    # Well past the arming delay: the box must still be asking.
    read_for(1.5)
    if b"Itprintedhi." in screen_text():
        term.dump()
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
        term.dump()
        sys.stderr.write("bosun did not leave after ten Ctrl-C presses and 20 s\n")
        sys.exit(1)
read_for(0.5)
term.dump()
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 2)
