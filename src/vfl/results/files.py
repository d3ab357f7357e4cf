"""The run directory: resolved config, partition, metrics, summary, ledger, checkpoint (no torch).

Layout::

    RUN_DIR/
      config.toml       the resolved configuration
      partition.json    which features each party holds
      metrics.jsonl     one JSON record per evaluation (after every epoch)
      metrics.jsonl.crc32  a checksum per record of metrics.jsonl (``record_sums``)
      summary.json      final and best metrics, bytes, rounds and time (a finished run)
      ledger.csv        bytes and message counts by round, phase, direction, party and kind
      checkpoint.pt     state after the last checkpointed round (for --resume)
      trees-checkpoint.json  a tree run's state after its last complete tree (for --resume)
      error.txt         why the last attempt did not finish (absent once it does)
      traceback.txt     the full traceback of an unexpected error (a bug to report)

A new run only ever starts in a folder that does not exist or is empty (``check_new``), so a
finished run, a failed one, or any file the user put there is never overwritten.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import shutil
import traceback
from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol

from vfl.errors import ConfigError, VflError
from vfl.results.record_sums import (
    DamagedRecordsError,
    append_line,
    check_sums,
    summed,
    write_lines,
)

CONFIG = "config.toml"
PARTITION = "partition.json"
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
LEDGER = "ledger.csv"
CHECKPOINT = "checkpoint.pt"
TREE_CHECKPOINT = "trees-checkpoint.json"
COMPUTE = "compute.csv"
ERROR = "error.txt"
TRACEBACK = "traceback.txt"

RUN_FILES = (CHECKPOINT, TREE_CHECKPOINT, METRICS, SUMMARY, PARTITION, ERROR)
"""Files only vfl writes: a folder holding one of them is (part of) a vfl run."""
CHECKPOINT_KEYS = ("epoch", "elapsed", "session", "torch_rng")
TRACEBACK_NOTE = "full traceback: "
"""How ``record_failure`` notes on an exception where its traceback was saved."""
OS_HINTS = {
    errno.EACCES: "check its permissions, or choose another location",
    errno.EPERM: "check its permissions, or choose another location",
    errno.EROFS: "the file system is read-only: choose another location",
    errno.ENOSPC: "free some space, or choose another location",
    errno.ENOTDIR: "part of the path is a file, not a folder",
    errno.EEXIST: "a file is in the way",
    errno.EISDIR: "a folder is in the way",
}
"""What to do about the file-system errors that users cause most often."""


class RunFileError(VflError):
    """A file of a run directory is unreadable or corrupt; the message names it."""


class MetricsSink(Protocol):
    """Another place that every ``metrics.jsonl`` record goes to (``vfl.results.tensorboard``)."""

    def write(self, record: dict[str, Any]) -> None:
        """Take one evaluation record, as written to ``metrics.jsonl``."""
        ...

    def truncate(self, rounds: int) -> None:
        """Forget records of rounds after ``rounds`` (a resume from a checkpoint)."""
        ...

    def close(self) -> None:
        """Finish writing."""
        ...


class RunDirectory:
    """Reads and writes the files of one run.

    Args:
        path: The run directory (created if missing).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.sinks: list[MetricsSink] = []  # also get every record (TensorBoard)

    def close_sinks(self) -> None:
        """Close every sink (their files are complete) and forget them."""
        for sink in self.sinks:
            sink.close()
        self.sinks.clear()

    def file(self, name: str) -> Path:
        """Path of a file inside the run directory."""
        return self.path / name

    def write_text(self, name: str, text: str) -> None:
        """Write a text file atomically (write a temporary file, then rename)."""
        target = self.file(name)
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(text)
        os.replace(temporary, target)

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one evaluation record to ``metrics.jsonl``."""
        append_line(self.file(METRICS), json.dumps(record, sort_keys=False))
        for sink in self.sinks:
            sink.write(record)

    def read_metrics(self, *, torn_tail: bool = False) -> list[dict[str, Any]]:
        """All records of ``metrics.jsonl`` (empty if none yet).

        ``torn_tail``: leave out a last line a killed process cut short (``read_records``).

        Raises:
            RunFileError: naming the line that is not a JSON record.
        """
        path = self.file(METRICS)
        return read_records(path, torn_tail=torn_tail) if path.exists() else []

    def truncate_metrics(self, rounds: int) -> None:
        """Keep only records of rounds ``<= rounds`` (before resuming from a checkpoint).

        A last line cut short (the process was killed while writing it) is dropped: it was
        written after the checkpoint, so the resumed run writes it again. When anything is
        dropped, the file as it was is kept first (``metrics.jsonl.resumed-<UTC time>``). The
        checksums are rewritten with it (a run from before them gets them). Every sink
        (TensorBoard) drops its records of later rounds too.
        """
        for sink in self.sinks:
            sink.truncate(rounds)
        path = self.file(METRICS)
        if not path.exists():
            return
        kept = [r for r in read_records(path, torn_tail=True) if int(r["round"]) <= rounds]
        lines = [json.dumps(r) for r in kept]
        if path.read_text() != "".join(line + "\n" for line in lines):
            keep_copy(path, "resumed")
        if not summed(path, lines):
            write_lines(path, lines)

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        """Write a JSON file atomically."""
        self.write_text(name, json.dumps(data, indent=2) + "\n")

    def read_json(self, name: str) -> dict[str, Any]:
        """Read a JSON file of the run.

        Raises:
            RunFileError: if the file is not a JSON object.
        """
        path = self.file(name)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise RunFileError(f"{str(path)!r} is not valid JSON: {error}") from None
        if not isinstance(data, dict):
            raise RunFileError(f"{str(path)!r} must hold a JSON object")
        return data

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        """Save ``state`` atomically, replacing the previous checkpoint."""
        target = self.file(CHECKPOINT)
        temporary = target.with_name(target.name + ".tmp")
        import torch  # deferred: reading results must not need torch

        torch.save(state, temporary)
        os.replace(temporary, target)

    def load_checkpoint(self, *, lazily: bool = False) -> dict[str, Any]:
        """Load the checkpoint (tensors and plain containers only; no arbitrary objects).

        With ``lazily``, tensors are memory-mapped rather than read (for a look at the metadata).

        Raises:
            ConfigError: if there is no checkpoint.
            RunFileError: if the checkpoint cannot be read (cut short, corrupt, not vfl's).
        """
        path = self.file(CHECKPOINT)
        if not path.exists():
            raise ConfigError(
                f"no checkpoint in {str(self.path)!r}; cannot resume (was the run started with"
                " train.checkpoint = false, or stopped before its first checkpoint?)"
            )
        import torch

        try:
            # on the CPU: a run saved on CUDA resumes on a machine without it; the roles' own
            # load_state_dict moves what they hold to their models' devices
            state = torch.load(path, weights_only=True, mmap=lazily, map_location="cpu")
        except OSError as error:
            if error.filename is not None:  # the file system's error, naming the file
                raise
            if lazily:  # a full load tells what is wrong, or reads an older format
                return self.load_checkpoint()
            raise self._unreadable(path, error) from None
        except Exception as error:  # torch.load reports damage as many types
            if lazily:
                return self.load_checkpoint()
            raise self._unreadable(path, error) from None
        if not isinstance(state, dict):
            raise RunFileError(f"{str(path)!r} is not a vfl checkpoint: it holds no dictionary")
        missing = [key for key in CHECKPOINT_KEYS if key not in state]
        if missing:
            raise RunFileError(f"{str(path)!r} is not a vfl checkpoint: it lacks {missing}")
        return dict(state)

    @staticmethod
    def _unreadable(path: Path, error: Exception) -> RunFileError:
        return RunFileError(
            f"checkpoint {str(path)!r} cannot be read ({failure_line(error)}); it is cut short"
            " or corrupt, so the run cannot resume from it: start a new run"
        )

    def record_failure(self, error: BaseException, message: str) -> None:
        """Say in the folder that the run did not finish: ``error.txt`` holds ``message``.

        For an unexpected error (not a ``VflError``, an ``OSError`` or an interruption) the
        traceback goes to ``traceback.txt`` too, and a note on ``error`` says where
        (``saved_traceback``). Best effort: a failure to write is ignored, so the original
        error is what the user sees.
        """
        try:
            self.write_text(ERROR, message.rstrip("\n") + "\n")
            if not expected(error):
                trace = "".join(traceback.format_exception(error))
                self.write_text(TRACEBACK, trace)
                error.add_note(f"{TRACEBACK_NOTE}{self.file(TRACEBACK)}")
        except OSError:
            pass

    def clear_failure(self) -> None:
        """Remove what ``record_failure`` wrote (a resumed attempt replaces it)."""
        for name in (ERROR, TRACEBACK):
            self.file(name).unlink(missing_ok=True)


def read_records(path: Path, *, torn_tail: bool = False) -> list[dict[str, Any]]:
    """The JSON records of a JSON-lines file vfl appends to (one record and newline a write).

    A last line without its newline that is not JSON is the torn tail a killed process leaves:
    with ``torn_tail`` it is left out. Any other line that is not JSON is damage, and so is a
    line that differs from its checksum where the file has them (``record_sums``).

    Raises:
        RunFileError: naming the file and the line that is not a JSON record or differs from
            its checksum.
    """
    text = path.read_text()
    lines = text.split("\n")
    try:
        check_sums(path, lines[:-1])
    except DamagedRecordsError as error:
        raise RunFileError(str(error)) from None
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            if torn_tail and number == len(lines):  # the last line, without its newline
                break
            torn = number == len(lines)
            raise RunFileError(
                f"{str(path)!r} line {number} is not a JSON record ({error.msg}); "
                + (
                    "a process killed while writing cuts the last line short: `vfl run"
                    " --resume` drops such a line (keeping a copy of the file), else delete it"
                    if torn
                    else "it is not the last line, so it was not cut short by a kill: the file"
                    " is damaged; restore it, or delete the line"
                )
            ) from None
    return records


def keep_copy(path: Path, why: str) -> Path:
    """Copy ``path`` to ``<name>.<why>-<UTC time>`` beside it (never over a file); the copy."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    copy, number = path.with_name(f"{path.name}.{why}-{stamp}"), 1
    while copy.exists():
        number += 1
        copy = path.with_name(f"{path.name}.{why}-{stamp}-{number}")
    shutil.copy2(path, copy)
    return copy


def set_aside(path: Path, why: str) -> Path:
    """Rename ``path`` (a folder) to ``<name>.<why>-<UTC time>`` beside it; the new path."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    moved, number = path.with_name(f"{path.name}.{why}-{stamp}"), 1
    while moved.exists():
        number += 1
        moved = path.with_name(f"{path.name}.{why}-{stamp}-{number}")
    os.rename(path, moved)
    return moved


def check_new(
    path: Path,
    *,
    allow: Collection[str] = (),
    resume: str = "",
    new_run: str = "choose another --run-dir",
) -> None:
    """Refuse to start a new run in ``path`` unless it is missing or an empty folder.

    ``allow`` names entries a new run may find there (``vfl launch``'s ``logs`` folder);
    ``resume`` is the command that continues a run found there (default: ``vfl run --resume``),
    ``new_run`` what starts a new one instead.

    Raises:
        ConfigError: naming what is in the way and what to do instead.
    """
    if not path.exists():
        return
    if not path.is_dir():
        raise ConfigError(f"run directory {str(path)!r} exists as a file; choose another --run-dir")
    present = sorted(entry.name for entry in path.iterdir() if entry.name not in allow)
    if not present:
        return
    if CHECKPOINT in present or TREE_CHECKPOINT in present:
        raise ConfigError(
            f"run directory {str(path)!r} already holds a run; continue it with"
            f" `{resume or f'vfl run --resume {path}'}` (with --set train.epochs=N to train an"
            f" ended run further), or {new_run}"
        )
    if any(name in present for name in RUN_FILES):
        raise ConfigError(
            f"run directory {str(path)!r} already holds a run, without a checkpoint to resume"
            " from; choose another --run-dir, or delete the folder to use its name again"
        )
    shown = ", ".join(repr(name) for name in present[:3]) + (", ..." if len(present) > 3 else "")
    raise ConfigError(
        f"run directory {str(path)!r} is not empty ({shown}) and is not a vfl run; a new run"
        " needs a new or empty folder, so nothing in it is overwritten: choose another --run-dir"
    )


def check_output(out: Path, *, force: bool, inputs: Collection[Path] = ()) -> None:
    """Refuse to write ``out`` over one of the command's ``inputs``, or over a file unasked.

    Raises:
        ConfigError: naming ``out`` and the input it is, or the file that exists.
    """
    for source in inputs:
        if _same_file(out, source):
            raise ConfigError(
                f"--out {str(out)!r} is the input {str(source)!r}: writing it would destroy"
                " what is being read (--force does not change that); choose another --out"
            )
    if out.exists() and not force:
        raise ConfigError(f"{out} already exists; choose another --out or pass --force")


def _same_file(one: Path, other: Path) -> bool:
    if one.exists() and other.exists():
        return os.path.samefile(one, other)
    return one.resolve() == other.resolve()


def expected(error: BaseException) -> bool:
    """Whether ``error`` is a failure vfl reports in one line (not a bug to report)."""
    return isinstance(error, VflError | OSError | KeyboardInterrupt)


def failure_line(error: BaseException) -> str:
    """One line saying what went wrong.

    A vfl error's own message; for a file-system error the file and the reason (and what to do
    for the common ones); for anything else its type and the first line of its message.
    """
    if isinstance(error, OSError):
        return _os_error_line(error)
    text = str(error).strip()
    if isinstance(error, VflError):
        return text or type(error).__name__
    first = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _os_error_line(error: OSError) -> str:
    if error.filename is None:
        return f"{type(error).__name__}: {error}"
    where = repr(str(error.filename))
    if error.filename2 is not None:
        where += f" -> {str(error.filename2)!r}"
    reason = error.strerror or type(error).__name__
    hint = OS_HINTS.get(error.errno or 0)
    return f"{where}: {reason}" + (f"; {hint}" if hint else "")


def saved_traceback(error: BaseException) -> Path | None:
    """Where ``RunDirectory.record_failure`` saved the traceback of ``error``, if it did."""
    for note in getattr(error, "__notes__", ()):
        if isinstance(note, str) and note.startswith(TRACEBACK_NOTE):
            return Path(note.removeprefix(TRACEBACK_NOTE))
    return None
