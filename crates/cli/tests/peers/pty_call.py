"""`bosun` on a pseudo-terminal for one command that asks a question: answers it once it is
asked, then prints everything the terminal showed (escapes included) once the command ends.

Usage: pty_call.py BOSUN WORKSPACE PROMPT ANSWER ARGS...
The environment (BOSUN_HOME, PATH) is passed on. Exits with bosun's status, or 1 with a reason
on stderr if the question was not asked, or the command did not end, within 60 s.
"""

import sys

from pty_terminal import Terminal

bosun, workspace, prompt, answer, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
term = Terminal(bosun, workspace, args)
term.wait_for(prompt, 60, "question")
term.send(answer + "\r")
term.finish(60)
