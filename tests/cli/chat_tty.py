#!/usr/bin/env python3
"""hearth chat on a terminal: each session runs the chat on a pseudo-terminal (pty.fork makes
it the chat's controlling terminal, so Ctrl-C is a real SIGINT while a reply streams) with the
shipped model, greedy, and checks what a user sees and what the model was sent (--dump-prompt):
- Ctrl-C during a reply stops it and returns to the prompt; what was generated stays in the
  conversation; the next message is answered; Ctrl-C at an empty prompt warns, a second exits 0;
- Ctrl-D exits 0; the banner;
- the line editor in raw mode: Up recalls the previous line, Ctrl-A / Left edit it;
- a bracketed paste is one multi-line message;
- the typed lines persist: Up in a new chat recalls the last chat's line (--history-file, or
  $XDG_STATE_HOME/hearth/chat_history, made for the owner only); --no-history keeps none;
- the typed text is coloured, and with NO_COLOR there is no colour code at all;
- a SIGTERM at the prompt ends the chat by that signal with the terminal back in its normal
  mode (the test holds the terminal's other end open to read its settings afterwards).
Environment: HEARTH_BIN (the hearth binary), HEARTH_SRC (the source tree)."""
import fcntl, os, pty, re, select, shutil, signal, struct, sys, tempfile, termios, time

H = os.environ["HEARTH_BIN"]
M = os.path.join(os.environ["HEARTH_SRC"], "models", "bible-drelu.gguf")
TMP = tempfile.mkdtemp()
PROMPT_FILE = os.path.join(TMP, "prompt")
SGR = re.compile(rb"\x1b\[[0-9;]*m")
fails = 0


def fail(msg):
    global fails
    fails += 1
    print("FAIL: " + msg)


class Chat:
    """One hearth chat on a pseudo-terminal of 200 columns."""

    def __init__(self, *flags, env=None):
        e = dict(os.environ, TERM="xterm", XDG_STATE_HOME=os.path.join(TMP, "state"))
        e.pop("NO_COLOR", None)
        e.update(env or {})
        argv = [H, "chat", "-m", M, "--temp", "0", "-t", "2", "--gpu", "off", "--verbose",
                "--dump-prompt", PROMPT_FILE, *flags]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(H, argv, e)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
        self.out = b""
        self.seen = 0  # expect() searches output after this offset

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the chat closed the terminal
            data = b""
        self.out += data
        return bool(data)

    def expect(self, pattern, what, timeout=15):
        """Waits for pattern (bytes regex) in the output after the last match."""
        rx = re.compile(pattern)
        end = time.time() + timeout
        while True:
            m = rx.search(self.out, self.seen)
            if m:
                self.seen = m.end()
                return m
            left = end - time.time()
            if left <= 0 or not self._read(left):
                fail("%s: no %r in the output; its end:\n%s" % (what, pattern, self.out[-600:].decode(errors="replace")))
                raise TimeoutError

    def send(self, data):
        os.write(self.fd, data)

    def wait(self, what, timeout=10):
        """Exit status once the chat ends (its output drained)."""
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._read(0.05):
                    pass
                return os.waitstatus_to_exitcode(st)
            self._read(0.05)
        fail(what + ": the chat did not exit")
        self.kill()
        return None

    def terminal(self):
        """The pseudo-terminal's far end, opened by number (TIOCGPTN), so its settings outlive
        the chat."""
        n = struct.unpack("I", fcntl.ioctl(self.fd, 0x80045430, b"\0\0\0\0"))[0]
        return os.open("/dev/pts/%d" % n, os.O_RDWR | os.O_NOCTTY)

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


def prompt_text():
    with open(PROMPT_FILE, "rb") as f:
        return f.read()


PROMPT = rb"\r> "   # the editor redraws its row from the first column
VERBOSE = rb"reply: (\d+) tokens"


def ctrl_c():
    """A reply long enough to interrupt (-c 2048 -n -1: up to ~2000 tokens): Ctrl-C once output
    streams, back at the prompt with far fewer tokens; the next reply streams too (stopped the
    same way), and its prompt holds the interrupted reply."""
    c = Chat("-c", "2048", "-n", "-1")
    try:
        c.expect(rb"/help for commands", "banner")
        c.expect(PROMPT, "first prompt")
        c.send(b"In the beginning\r")
        c.expect(rb"In the beginning\x1b\[0m\x1b\[0K\r\x1b\[\d+C\r+\n\x1b\[\?2004l\s*[A-Za-z]", "first reply starts")
        c.send(b"\x03")
        m = c.expect(VERBOSE, "first reply ends")
        if int(m.group(1)) > 1500:
            fail("Ctrl-C: the reply ran to %s tokens" % m.group(1))
        c.expect(PROMPT, "prompt after Ctrl-C", timeout=5)
        c.send(b"And the earth\r")
        c.expect(rb"And the earth\x1b\[0m\x1b\[0K\r\x1b\[\d+C\r+\n\x1b\[\?2004l\s*[A-Za-z]", "second reply starts")
        c.send(b"\x03")
        c.expect(VERBOSE, "second reply ends")
        c.expect(PROMPT, "prompt after the second Ctrl-C", timeout=5)
        p = prompt_text()
        kept = re.search(rb"In the beginning<\|im_end\|>\n<\|im_start\|>assistant\n(.+?)<\|im_end\|>\n"
                         rb"<\|im_start\|>user\nAnd the earth<\|im_end\|>", p, re.S)
        if not kept:
            fail("Ctrl-C: the interrupted reply is not in the next prompt:\n%s\n%r" % (p[:400], c.out[-3000:]))
        # Ctrl-C on an empty line warns; a second one quits with status 0.
        c.send(b"\x03")
        c.expect(rb"press Ctrl-C again or Ctrl-D", "warning of Ctrl-C at an empty prompt")
        c.expect(PROMPT, "prompt after the warning")
        c.send(b"\x03")
        rc = c.wait("second Ctrl-C")
        if rc != 0:
            fail("second Ctrl-C at an empty prompt: exit status %s, want 0" % rc)
    except TimeoutError:
        c.kill()


def editing():
    """History, editing keys, paste and colour in raw mode; Ctrl-D quits with status 0."""
    c = Chat("-n", "4")
    try:
        c.expect(rb"template chatml \| context 256 tokens", "banner")
        c.expect(PROMPT, "first prompt")
        c.send(b"beginning\x01In the \r")       # Ctrl-A, then typing at the start
        c.expect(VERBOSE, "first reply")
        c.expect(PROMPT, "second prompt")
        c.send(b"\x1b[A\x1b[D\x1b[D\x1b[D\x7fX\r")   # Up recalls it; Left x3, Backspace, X
        c.expect(VERBOSE, "second reply")
        c.expect(PROMPT, "third prompt")
        p = prompt_text()
        users = re.findall(rb"<\|im_start\|>user\n(.*?)<\|im_end\|>", p, re.S)
        if users != [b"In the beginning", b"In the beginXing"]:
            fail("editing / history: the user messages were %r" % users)
        c.send(b"\x1b[200~In the\rbeginning\x1b[201~\r")
        c.expect(VERBOSE, "reply to a paste")
        c.expect(PROMPT, "prompt after a paste")
        if not re.search(rb"<\|im_start\|>user\nIn the\nbeginning<\|im_end\|>", prompt_text()):
            fail("paste: not one message of two lines:\n%s" % prompt_text()[-200:])
        c.send(b"\x04")
        rc = c.wait("Ctrl-D")
        if rc != 0:
            fail("Ctrl-D: exit status %s, want 0" % rc)
        if b"\x1b[1;32mIn the beginning\x1b[0m" not in c.out:
            fail("colour: the typed text is not coloured on a terminal")
    except TimeoutError:
        c.kill()


def one_line(flags, keys, what, env=None):
    """A chat that sends keys at its first prompt, waits for the reply and quits with Ctrl-D;
    returns the user messages it sent."""
    c = Chat("-n", "2", *flags, env=env)
    try:
        c.expect(PROMPT, what + ": prompt")
        c.send(keys)
        c.expect(VERBOSE, what + ": reply")
        c.expect(PROMPT, what + ": prompt after the reply")
        c.send(b"\x04")
        if c.wait(what) != 0:
            fail(what + ": Ctrl-D did not end the chat with status 0")
        return re.findall(rb"<\|im_start\|>user\n(.*?)<\|im_end\|>", prompt_text(), re.S)
    except TimeoutError:
        c.kill()
        return None


def history():
    """Lines typed in one chat come back with Up in the next; --no-history keeps none."""
    h = os.path.join(TMP, "hist", "chat_history")
    one_line(["--history-file", h], b"In the beginning God\r", "history, first chat")
    if not os.path.exists(h) or os.stat(h).st_mode & 0o777 != 0o600:
        fail("history: %s missing or not 0600" % h)
    users = one_line(["--history-file", h], b"\x1b[A\r", "history, second chat")
    if users != [b"In the beginning God"]:
        fail("history: Up in a new chat sent %r, want the last chat's line" % users)
    one_line(["--history-file", h, "--no-history"], b"created the heaven\r", "--no-history")
    kept = open(h, "rb").read() if os.path.exists(h) else None
    if kept != b"In the beginning God\n":
        fail("history: the file holds %r after a recall and a --no-history chat" % kept)
    # the default place: $XDG_STATE_HOME/hearth/chat_history
    x = os.path.join(TMP, "xdg")
    one_line([], b"and the earth\r", "history in XDG_STATE_HOME", env={"XDG_STATE_HOME": x})
    d = os.path.join(x, "hearth", "chat_history")
    if not os.path.exists(d) or open(d, "rb").read() != b"and the earth\n":
        fail("history: nothing kept in %s" % d)


def no_color():
    c = Chat("-n", "4", env={"NO_COLOR": "1"})
    try:
        c.expect(PROMPT, "prompt (NO_COLOR)")
        c.send(b"In the beginning\r")
        c.expect(VERBOSE, "reply (NO_COLOR)")
        c.expect(PROMPT, "prompt after the reply (NO_COLOR)")
        tty = c.terminal()
        if termios.tcgetattr(tty)[3] & termios.ICANON:
            fail("the line editor does not put the terminal in raw mode")
        os.kill(c.pid, signal.SIGTERM)
        rc = c.wait("SIGTERM at the prompt")
        if rc != -signal.SIGTERM:
            fail("SIGTERM at the prompt: exit status %s, want death by SIGTERM" % rc)
        lflag = termios.tcgetattr(tty)[3]
        os.close(tty)
        if not (lflag & termios.ICANON and lflag & termios.ECHO):
            fail("SIGTERM at the prompt left the terminal in raw mode")
        if SGR.search(c.out):
            fail("NO_COLOR: colour codes in the output: %r" % SGR.findall(c.out)[:3])
    except TimeoutError:
        c.kill()


t0 = time.time()
ctrl_c()
editing()
history()
no_color()
shutil.rmtree(TMP, ignore_errors=True)
if fails:
    print("%d failure(s)" % fails)
    sys.exit(1)
print("ok (%.1f s)" % (time.time() - t0))
