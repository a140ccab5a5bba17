"""The real `bosun` binary in a pseudo-terminal, for the scripts that drive it as a person would
(`pty_session.py`, `first_run_pty.py`, `pty_features.py`): start it, read what it draws, wait
for text on screen, type."""

import codecs
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
CSI = re.compile(r"\x1b\[([0-9;?]*)([ -/]*)([@-~])")
OTHER_ESCAPE = re.compile(r"\x1b(\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78])")
ROWS, COLUMNS = 30, 100


class Screen:
    """The screen as it stands: what was drawn, replayed on a grid of the terminal's size (cursor
    moves, clears and text; styles ignored). Fed as bytes arrive, so a sequence split between
    two reads is kept until its end comes. Unlike the stream, a word drawn over cells that
    already held some of its letters reads whole here, since ratatui sends only the cells that
    changed."""

    def __init__(self, rows=ROWS, columns=COLUMNS):
        self.height, self.width = rows, columns
        self.grid = [[" "] * columns for _ in range(rows)]
        self.saved = None
        self.row = self.col = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending = ""

    def resize(self, rows, columns):
        """The terminal was resized: what is drawn next is laid out for the new size."""
        self.height, self.width = rows, columns
        self.grid = [[" "] * columns for _ in range(rows)]
        self.row = self.col = 0

    def feed(self, data):
        text = self.pending + self.decoder.decode(data)
        at = 0
        while at < len(text):
            c = text[at]
            if c == "\x1b":
                m = CSI.match(text, at)
                if m:
                    self.csi(m.group(1), m.group(3))
                    at = m.end()
                    continue
                m = OTHER_ESCAPE.match(text, at)
                if m:
                    at = m.end()
                    continue
                if len(text) - at < 64 and "\x07" not in text[at:]:
                    break  # An escape sequence whose end has not arrived yet.
                at += 1
                continue
            if c == "\r":
                self.col = 0
            elif c == "\n":
                self.row += 1
                if self.row >= self.height:
                    self.grid = self.grid[1:] + [[" "] * self.width]
                    self.row = self.height - 1
            elif c == "\b":
                self.col = max(0, self.col - 1)
            elif c >= " ":
                if 0 <= self.row < self.height and 0 <= self.col < self.width:
                    self.grid[self.row][self.col] = c
                self.col += 1
            at += 1
        self.pending = text[at:]

    def csi(self, params, final):
        if params in ("?1049", "?1047", "?47") and final in "hl":
            # The alternate screen: entered empty, and the main screen is back on leaving.
            if final == "h":
                self.saved = self.grid
                self.grid = [[" "] * self.width for _ in range(self.height)]
            elif self.saved is not None:
                self.grid, self.saved = self.saved, None
            return
        if params.startswith("?"):
            return  # Other modes (the cursor shown, mouse reports, bracketed paste).
        nums = [int(n) if n.isdigit() else 0 for n in params.split(";")] if params else []
        first = nums[0] if nums else 0
        if final in "Hf":
            self.row = max(1, first or 1) - 1
            self.col = max(1, nums[1] if len(nums) > 1 and nums[1] else 1) - 1
        elif final == "G":
            self.col = max(1, first or 1) - 1
        elif final == "A":
            self.row = max(0, self.row - (first or 1))
        elif final == "B":
            self.row = min(self.height - 1, self.row + (first or 1))
        elif final == "C":
            self.col = min(self.width - 1, self.col + (first or 1))
        elif final == "D":
            self.col = max(0, self.col - (first or 1))
        elif final == "J":
            if first == 2 or first == 3:
                self.grid = [[" "] * self.width for _ in range(self.height)]
            elif first == 0 and 0 <= self.row < self.height:
                for x in range(self.col, self.width):
                    self.grid[self.row][x] = " "
                for y in range(self.row + 1, self.height):
                    self.grid[y] = [" "] * self.width
        elif final == "K" and 0 <= self.row < self.height:
            start, end = {0: (self.col, self.width), 1: (0, self.col + 1), 2: (0, self.width)}.get(first, (0, 0))
            for x in range(start, end):
                self.grid[self.row][x] = " "

    def rows(self):
        return ["".join(r) for r in self.grid]


class Terminal:
    """`bosun` (with `args`) started in `workspace` on a 100x30 terminal; the environment is
    passed on."""

    def __init__(self, bosun, workspace, args=()):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(workspace)
            os.environ["TERM"] = "xterm-256color"
            os.execv(bosun, [bosun, *args])
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.seen = b""
        self.screen = Screen()

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
                self.screen.feed(chunk)
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

    def resize(self, rows, columns):
        """Resizes the terminal, as dragging its window does (the program gets SIGWINCH)."""
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.screen.resize(rows, columns)

    def rows(self):
        """The screen as it stands, one string per row."""
        return self.screen.rows()

    def on_screen(self, text):
        """Whether `text` is on one row of the screen as it stands."""
        return any(text in row for row in self.rows())

    def wait_rows(self, text, seconds, what):
        """Waits for `text` on one row of the screen as it stands; prints what was drawn, the
        screen, and exits 1 if it does not come."""
        end = time.time() + seconds
        while not self.on_screen(text):
            if time.time() > end or not self.read_for(0.05):
                self.fail(f"no {what} ({text!r}) within {seconds} s")

    def fail(self, why):
        """Prints what was drawn and the screen as it stands, says `why` and exits 1."""
        self.dump()
        sys.stderr.write(f"{why}; the screen:\n" + "\n".join(self.rows()) + "\n")
        sys.exit(1)

    def send(self, data):
        os.write(self.fd, data.encode())

    def dump(self):
        """Prints everything the terminal showed, escape sequences included."""
        sys.stdout.buffer.write(self.seen)

    def finish(self, seconds):
        """Reads until the program ends, prints everything the terminal showed (escapes
        included) and exits with its status; kills it and exits 1 if it has not ended within
        `seconds`."""
        end = time.time() + seconds
        while time.time() < end:
            open_ = self.read_for(0.2)
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.read_for(0.3)
                break
            if not open_:
                _, status = os.waitpid(self.pid, 0)
                break
        else:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
            sys.stderr.write(f"bosun did not end within {seconds} s\n")
            sys.stdout.write(self.seen.decode("utf-8", "replace"))
            sys.exit(1)
        sys.stdout.write(self.seen.decode("utf-8", "replace"))
        sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 2)

    def answer_trust(self, answer):
        """Answers the question a folder Bosun has not run in before is asked with."""
        self.wait_for("Trust the files in this folder? [y/n]", 30, "workspace question")
        self.send(answer + "\r")
