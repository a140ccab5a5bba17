"""`bosun run` on a pseudo-terminal, as a person at a terminal runs it: a command's output shows
under its call while the command runs, and Ctrl-C cancels the run with that output kept on
screen.

Usage: pty_run.py BOSUN WORKSPACE
The environment (BOSUN_HOME, PATH) is passed on; the model is scripted to run a command that
prints a line and then sleeps. Prints everything the terminal showed to stdout and exits 1 with
a reason and the screen on stderr if a step did not happen in time; exits with bosun's status
otherwise.
"""

import os
import sys
import time

from pty_terminal import Terminal

bosun, workspace = sys.argv[1], sys.argv[2]
term = Terminal(bosun, workspace, ["run", "--trust-workspace", "Run the long command."])
pid = term.pid

# The first line arrives while the command still runs: the spinner says what the run waits on.
term.wait_rows("│ partial-output-1", 60, "the command's first line, streamed while it runs")
term.wait_rows("running run_command", 10, "the spinner while the command runs")
done, _ = os.waitpid(pid, os.WNOHANG)
if done:
    term.fail("bosun ended before the command was interrupted")

term.send("\x03")
end = time.time() + 30
status = None
while time.time() < end:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    term.read_for(0.1)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    term.fail("bosun did not end within 30 s of Ctrl-C")
term.read_for(0.3)
# What the command printed before it was stopped is still on screen.
if not term.on_screen("│ partial-output-1"):
    term.fail("the command's output is gone after Ctrl-C")
term.dump()
if os.WIFEXITED(status):
    sys.stderr.write(f"bosun exited with {os.WEXITSTATUS(status)}\n")
    sys.exit(os.WEXITSTATUS(status))
sys.stderr.write(f"bosun was killed by signal {os.WTERMSIG(status)}\n")
sys.exit(2)
