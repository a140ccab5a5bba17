"""Drives the terminal UI's switches in the real `bosun` binary in a pseudo-terminal, as a person
would: Shift-Tab through the modes, the `@path` list, a `!cmd`, a run that changes a file and
creates another and `/undo` of it, and Esc interrupting a running command with a task queued
behind it.

Usage: pty_features.py BOSUN WORKSPACE SCREENS
The environment (BOSUN_HOME, PATH) is passed on; the screen as it stands at three moments (the
modes cycled, the `@path` list open, the terminal resized to 60x20) is written to
SCREENS/<moment>.txt for the test to compare with its snapshots; the model is scripted to patch `src/lib.rs` and
create `notes.txt` for the first task, answer "Changed it.", and run a command that prints a
line and then sleeps for the second. Every step waits for what the screen shows (the screen as
it stands, replayed from what was drawn), never for a time. Prints everything the terminal
showed to stdout and exits 1 with a reason and the screen on stderr if a step did not happen
in time.
"""

import os
import sys
import time

from pty_terminal import Terminal

bosun, workspace, screens = sys.argv[1], sys.argv[2], sys.argv[3]
term = Terminal(bosun, workspace)
wait, send, on_screen = term.wait_rows, term.send, term.on_screen
pid = term.pid


def keep_screen(moment):
    """Writes the screen as it stands, trailing spaces dropped, to SCREENS/<moment>.txt."""
    with open(os.path.join(screens, f"{moment}.txt"), "w") as f:
        f.write("\n".join(row.rstrip() for row in term.rows()) + "\n")


def wait_until(check, seconds, what):
    """Waits until `check()` holds for the screen as it stands."""
    end = time.time() + seconds
    while not check():
        if time.time() > end or not term.read_for(0.05):
            term.fail(f"no {what} within {seconds} s")


def wait_ready(what):
    """Waits for the idle prompt: a run's answer can be on screen while it is still storing
    the session, and what is typed then is queued or refused."""
    wait_until(lambda: " ready " in term.rows()[-3], 60, f"the idle prompt after {what}")


term.answer_trust("y")
wait("Type a task", 30, "start screen")

# Shift-Tab cycles the mode: workspace-write → full → plan → read-only → workspace-write, each
# said in the transcript and shown in the status line.
for said, status in [
    ("mode full: every known action allowed", " full "),
    ("mode plan: the model may only read", "plan mode (reads only)"),
    ("mode read-only: reads allowed", " read-only "),
    ("mode workspace-write: reads and workspace writes allowed", " workspace-write "),
]:
    send("\x1b[Z")
    wait(said, 10, f"{said!r} after Shift-Tab")
    wait_until(lambda: status in term.rows()[-1], 10, f"{status!r} in the status line")
keep_screen("modes")

# Resized, the screen is laid out again for the new size, and again when it grows back.
term.resize(20, 60)
wait_until(lambda: "scripted" in term.rows()[-1] and "ready" in term.rows()[-3], 10,
           "the screen laid out for 60x20")
keep_screen("resized")
term.resize(30, 100)
wait_until(lambda: "steps 0/24" in term.rows()[-1] and "ready" in term.rows()[-3], 10,
           "the screen laid out for 100x30 again")

# `@` opens the list of the workspace's files as it is typed; Enter writes the chosen path.
send("Look at @lib")
wait("@lib · 1 match · ↑↓ Enter Esc", 10, "the @path list's title")
wait("src/lib.rs", 10, "the file in the @path list")
keep_screen("mention")
send("\r")
wait("› Look at @src/lib.rs", 10, "the chosen path in the prompt")
if on_screen("1 match"):
    term.fail("the @path list stayed open after Enter")
send("\x15")  # Ctrl-U: the line is dropped, never sent
wait("› " + " " * 40, 10, "the emptied prompt")

# `!cmd` runs through the chokepoint; its output streams into the transcript.
send("!echo from-the-shell-$((6*7))\r")
wait("from-the-shell-42", 30, "the command's output")
wait_ready("the command")

# A run that patches one file and creates another, then /undo puts both back.
send("Change the answer.\r")
wait("Changed it.", 60, "the run's answer")
wait_ready("the run")
with open(os.path.join(workspace, "src/lib.rs")) as f:
    if "43" not in f.read():
        term.fail("the run did not patch src/lib.rs")
send("/undo\r")
wait("undid the file changes", 30, "the undo")
wait("removed (the run created them): notes.txt", 30, "the created file named")
wait_ready("the undo")

# Esc interrupts a running command: its output so far stays in its cell, and a task typed
# while it ran comes back to the prompt instead of being sent.
send("Run the long command.\r")
wait("partial-output-1", 60, "the command's first line, streamed while it runs")
send("Then the next thing.\r")
wait("queued (sent when this run ends): Then the next thing.", 10, "the queued task")
send("\x1b")
wait("cancelled; the session is saved", 30, "the interrupted run")
wait("1 queued task(s) back at the prompt", 10, "the queued task returned")
wait("› Then the next thing.", 10, "the queued task at the prompt")
if not on_screen("partial-output-1"):
    term.fail("the command's partial output is gone after the cancel")
send("\x15")  # Ctrl-U: the returned task is dropped, never sent

status = None
for _ in range(10):
    try:
        send("\x03")
    except OSError:
        pass
    term.read_for(0.3)
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    # Left the screen, bosun may still be storing the session and closing the trace.
    end = time.time() + 20
    while time.time() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        term.read_for(0.2)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        term.fail("bosun did not leave after ten Ctrl-C presses and 20 s")
term.read_for(0.5)
term.dump()
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 2)
