"""The shell commands of README.md and docs/, and how a test runs each as written.

``commands_in`` extracts every command of a Markdown file's fenced ``sh`` (``bash``, ``shell``,
``console``) blocks: a line, its ``\\`` continuations, or a ``for ... done`` loop, without its
trailing comment. A block of another language (``text`` for a usage synopsis with placeholders)
holds no command.

``python_blocks_in`` extracts every fenced ``python`` block the same way, keyed by its first line
that is not an import: a step with ``python`` set runs the blocks it names, in order, in one
Python process (a page's later block uses the names of its earlier ones, as a reader's session
would), followed by the step's ``checks`` (assertions of what the blocks' comments say).

``SESSIONS`` (in ``doc_sessions``) says how each command runs: in order with the others of its
session, in one bash process (so ``cd`` and ``&`` work as in a terminal), in a scratch copy of
the repository whose ``.venv`` is this one's. A step runs the command as the doc writes it, or
with arguments added to shorten training, or with a placeholder of the doc replaced by what a
test can use (a free port, a scratch folder); each step states that change. ``NOT_RUN`` names
the few commands no test can run here, each with the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = ("sh", "bash", "shell", "console")
PYTHON_LANGUAGES = ("python", "py")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
COPIED = (
    *("README.md", "Makefile", "pyproject.toml", "examples", "experiments", "docs"),
    *("bench", "tools", "requirements", "src"),
)
"""What a scratch copy of the repository holds (its ``.venv`` is a link to this one's)."""


@dataclass(frozen=True)
class DocCommand:
    """One command of a document: its text (continuations joined, comment cut) and place."""

    doc: str
    line: int
    text: str
    comments: tuple[str, ...] = ()
    """The comment lines that follow it in its block (what the doc shows it prints)."""


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def fenced_blocks(path: Path) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """Each fenced block of ``path``: its language and its numbered lines, fence indent cut."""
    block: list[tuple[int, str]] = []
    inside, language, indent = False, "", ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fence = FENCE.match(line)
        if fence and not inside:
            inside, language, indent, block = True, fence.group(2), fence[1], []
        elif fence:
            yield language, block
            inside = False
        elif inside:
            block.append((number, line.removeprefix(indent)))


def commands_in(path: Path, *, root: Path = ROOT) -> list[DocCommand]:
    """Every command of ``path``'s shell blocks, in order (``doc`` relative to ``root``)."""
    doc = str(path.relative_to(root))
    return [
        command
        for language, block in fenced_blocks(path)
        if language in SHELL_LANGUAGES
        for command in _commands(doc, block)
    ]


@dataclass(frozen=True)
class DocBlock:
    """One ``python`` block of a document: its key (first line not an import), code and place."""

    doc: str
    line: int
    key: str
    code: str


def python_blocks_in(path: Path, *, root: Path = ROOT) -> list[DocBlock]:
    """Every ``python`` block of ``path``, in order (``doc`` relative to ``root``)."""
    doc = str(path.relative_to(root))
    return [
        _python_block(doc, block)
        for language, block in fenced_blocks(path)
        if language in PYTHON_LANGUAGES and block
    ]


def _python_block(doc: str, lines: list[tuple[int, str]]) -> DocBlock:
    statements = [
        line.strip()
        for _, line in lines
        if line.strip() and not line.strip().startswith(("import ", "from ", "#"))
    ]
    key = normalise(_uncomment(statements[0])) if statements else ""
    return DocBlock(doc, lines[0][0], key, "\n".join(line for _, line in lines) + "\n")


def _commands(doc: str, lines: list[tuple[int, str]]) -> list[DocCommand]:
    """The commands of one block: each with the comment lines that follow it."""
    parts: list[tuple[int, list[str], list[str]]] = []  # first line, command lines, comments
    for number, raw in lines:
        line = raw.strip()
        if parts and _continues(parts[-1][1]):
            parts[-1][1].append(_uncomment(line))
        elif line.startswith("#"):
            if parts:
                parts[-1][2].append(line.lstrip("#").strip())
        elif line:
            parts.append((number, [_uncomment(line)], []))
    commands = []
    for number, command, comments in parts:
        pieces = [piece.removesuffix("\\").strip() for piece in command]
        text = "\n".join(pieces) if _is_loop(pieces[0]) else " ".join(pieces)
        commands.append(DocCommand(doc, number, normalise(text), tuple(comments)))
    return commands


def _is_loop(first: str) -> bool:
    return first.startswith(("for ", "while "))


def _continues(command: list[str]) -> bool:
    """Whether the next line belongs to the command begun in ``command``."""
    if _is_loop(command[0]):
        return not re.search(r"\bdone\b", " ".join(command))
    return command[-1].endswith("\\")


def _uncomment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` outside quotes after a blank)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line


def normalise(text: str) -> str:
    """Runs of blanks as one space, on each line."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


@dataclass(frozen=True)
class Step:
    """How a test runs one doc command.

    Attributes:
        doc: The document (``README.md``, ``docs/x.md``).
        command: The command as the doc writes it (``normalise``d).
        add: Arguments added at its end to shorten it (stated here, not in the doc).
        replace: Placeholders of the doc and what the test uses instead.
        status: The exit status it must end with.
        shown: Text the doc shows it printing: it must print it (stdout or stderr).
        expect: More text it must print, which the doc does not show word for word.
        files: Files or folders it must leave, relative to the scratch copy.
        file_shows: ``(file, text)``: a file it writes must hold text the doc shows.
        capture: A regular expression whose named groups, matched in what it printed, become
            values for the ``replace`` of later steps (the run folder it made).
        background: The doc starts it with ``&``; ``ready`` says when the next step may run.
        ready: For a background step: a port (``port:N``), a file (``file:PATH``) or text on
            its standard error (``err:TEXT``) to wait for.
        timeout: Seconds it may take.
        python: Keys of ``python`` blocks of ``doc`` it runs in order, in one Python process
            (``command`` is then empty); ``replace`` applies to their code.
        checks: Python run after those blocks, in the same process: what their comments say.
    """

    doc: str
    command: str
    add: str = ""
    replace: tuple[tuple[str, str], ...] = ()
    status: int = 0
    shown: tuple[str, ...] = ()
    expect: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    file_shows: tuple[tuple[str, str], ...] = ()
    capture: str = ""
    background: bool = False
    ready: str = ""
    timeout: float = 600.0
    python: tuple[str, ...] = ()
    checks: str = ""

    def shell_text(self, values: dict[str, str]) -> str:
        """What the shell runs: the command, placeholders replaced, arguments added."""
        text = self.command
        for old, new in self.replace:
            text = text.replace(old, new.format(**values))
        if self.add:
            text = f"{text.removesuffix(' &')} {self.add.format(**values)}"
            text += " &" if self.background else ""
        return text


@dataclass(frozen=True)
class Session:
    """Doc commands that run in order in one scratch copy (each may need the ones before).

    Attributes:
        name: The test's id.
        steps: The commands, in order.
        slow: Whether it trains for minutes (``@pytest.mark.slow``).
        prepare: Makes what the doc assumes exists (``NEW.csv``: "your table"), given the
            scratch copy and the values placeholders are replaced with.
    """

    name: str
    steps: tuple[Step, ...]
    slow: bool = False
    prepare: Callable[[Path, dict[str, str]], None] | None = None


@dataclass
class Outcome:
    """What one step did."""

    step: Step
    ran: str
    status: int
    out: str
    err: str

    @property
    def printed(self) -> str:
        return self.out + self.err


@dataclass
class Workspace:
    """A scratch copy of the repository and a bash process that runs steps in it."""

    folder: Path
    values: dict[str, str] = field(default_factory=dict)
    shell: subprocess.Popen[str] | None = None
    count: int = 0

    @classmethod
    def create(cls, folder: Path) -> Workspace:
        """Copy the repository's files (not its runs) into ``folder``; link its ``.venv``."""
        folder.mkdir(parents=True)
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                ignore = shutil.ignore_patterns("__pycache__", "runs", "*.egg-info")
                shutil.copytree(source, folder / name, ignore=ignore)
            elif source.exists():
                shutil.copy2(source, folder / name)
        (folder / ".venv").symlink_to(ROOT / ".venv")
        values = {"root": str(folder), "tmp": str(folder / "tmp")}
        values |= {"port": str(free_port()), "http_port": str(free_port())}
        (folder / "tmp").mkdir()
        return cls(folder, values)

    def start(self) -> None:
        """Start the bash process (its own session: stopping it stops its jobs too)."""
        env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
        env.pop("PYTHONPATH", None)
        self.shell = subprocess.Popen(
            ["bash", "--norc", "--noprofile"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=self.folder,
            env=env,
            start_new_session=True,
        )

    def run(self, step: Step) -> Outcome:
        """Run ``step`` in the shell; wait for it (or, in the background, until it is ready)."""
        assert self.shell is not None and self.shell.stdin is not None
        self.count += 1
        base = self.folder / "tmp" / "steps" / str(self.count)
        base.parent.mkdir(exist_ok=True)
        text = step.shell_text(self.values)
        if step.python:
            code = Path(f"{base}.py")
            code.write_text(python_script(step, self.values), encoding="utf-8")
            text = f".venv/bin/python {code}"
        script = f"{{ {text}\n}} > {base}.out 2> {base}.err < /dev/null; echo $? > {base}.rc\n"
        self.shell.stdin.write(script)
        self.shell.stdin.flush()
        rc = Path(f"{base}.rc")
        deadline = time.monotonic() + step.timeout
        while not (rc.exists() and rc.read_text().strip()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {step.timeout:g} s: {text}")
            time.sleep(0.1)
        if step.background and step.ready:
            self._wait_ready(step.ready.format(**self.values), deadline, text, base)
        outcome = Outcome(
            step,
            text,
            int(rc.read_text()),
            Path(f"{base}.out").read_text(errors="replace"),
            Path(f"{base}.err").read_text(errors="replace"),
        )
        found = re.search(step.capture, outcome.printed) if step.capture else None
        if found:
            self.values.update(found.groupdict())
        return outcome

    def _wait_ready(self, ready: str, deadline: float, text: str, base: Path) -> None:
        kind, _, what = ready.partition(":")
        while True:
            if kind == "port" and _listening(int(what)):
                return
            if kind == "file" and (self.folder / what).exists():
                return
            if kind == "err" and what in Path(f"{base}.err").read_text(errors="replace"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{text}: not ready ({ready}) in time")
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the shell and every job it started."""
        if self.shell is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.shell.pid, signal.SIGTERM)
        try:
            self.shell.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.shell.pid, signal.SIGKILL)
            self.shell.wait()


def python_script(step: Step, values: dict[str, str]) -> str:
    """The code of ``step``'s blocks, in its order, placeholders replaced, then its checks."""
    blocks = {block.key: block for block in python_blocks_in(ROOT / step.doc)}
    missing = [key for key in step.python if key not in blocks]
    assert not missing, f"{step.doc} holds no python block beginning {missing}"
    code = "".join(blocks[key].code for key in step.python)
    for old, new in step.replace:
        assert old in code, f"{old!r} is not in the blocks {step.python} of {step.doc}"
        code = code.replace(old, new.format(**values))
    return f"{code}\n# the test's checks of what the blocks' comments say\n{step.checks}\n"


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def all_commands() -> Iterator[DocCommand]:
    """Every command of every document."""
    for path in documents():
        yield from commands_in(path)


def all_python_blocks() -> Iterator[DocBlock]:
    """Every ``python`` block of every document."""
    for path in documents():
        yield from python_blocks_in(path)
