"""The real `bosun` binary in a pseudo-terminal, for the scripts that drive it as a person would
(`pty_session.py`, `first_run_pty.py`): start it, read what it draws, wait for text on screen,
type."""

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time

ESCAPE = re.compile(rb"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")


class Terminal:
    """`bosun` (with `args`) started in `workspace` on a 100x30 terminal; the environment is
    passed on."""

    def __init__(self, bosun, workspace, args=()):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(workspace)
            os.environ["TERM"] = "xterm-256color"
            os.execv(bosun, [bosun, *args])
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.seen = b""

    def read_for(self, seconds):
        """Reads what is drawn for `seconds`; False once the terminal is closed."""
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    return False
                if not chunk:
                    return False
                self.seen += chunk
        return True

    def screen_text(self):
        """What was drawn, with escape sequences and spaces removed: ratatui moves the cursor
        between the cells it changes, so words on screen are not contiguous in the stream."""
        return re.sub(rb"\s", b"", ESCAPE.sub(b"", self.seen))

    def wait_for(self, text, seconds, what):
        """Waits for `text` on screen; prints what was drawn and exits 1 if it does not come."""
        end = time.time() + seconds
        needle = re.sub(r"\s", "", text).encode()
        while needle not in self.screen_text():
            if time.time() > end or not self.read_for(0.1):
                self.dump()
                sys.stderr.write(f"no {what} ({text!r}) within {seconds} s\n")
                sys.exit(1)

    def send(self, data):
        os.write(self.fd, data.encode())

    def dump(self):
        """Prints everything the terminal showed, escape sequences included."""
        sys.stdout.buffer.write(self.seen)

    def answer_trust(self, answer):
        """Answers the question a folder Bosun has not run in before is asked with."""
        self.wait_for("Trust the files in this folder? [y/n]", 30, "workspace question")
        self.send(answer + "\r")
