"""A fuzz case and the oracle every case is judged by.

A case is data (JSON-able, so a worker process can receive it): the files it
starts with, the command (a tool's argv or a named Python-API scenario), and what
the input is known to be: ``"error"`` (invalid by construction: it must be
refused), ``"ok"`` (valid by construction: it must succeed) or ``"any"`` (a
random mutation that may or may not leave it valid).

The oracle, for every case:
  * no crash signal and no hang (the worker process survives, within the timeout);
  * no ``Traceback`` and no ``internal error`` in stderr;
  * exit non-zero: the first stderr line is the error and is *located* (matches
    one of the case's ``locators``), stderr has at most three lines (the message,
    the source line, a caret) of at most ``MAX_LINE`` characters, and the case's
    directory is unchanged (nothing written, ``-o`` targets absent);
  * exit zero is allowed unless the case is ``"error"``; ``"ok"`` cases must exit 0.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field

# A diagnostic longer than this is not "one line" a person can read (a 10 MB
# source line must be cut around the column).
MAX_LINE = 1000
MAX_STDERR_LINES = 3

# A Python exception's name inside a message: an exception path that was passed
# through instead of being turned into a diagnostic ("cannot convert (IndexError: ...").
PYTHON_EXCEPTION = re.compile(
    r"\b(AttributeError|IndexError|KeyError|TypeError|ValueError|RecursionError|OverflowError|"
    r"ZeroDivisionError|UnicodeDecodeError|JSONDecodeError|RuntimeError|AssertionError|NameError|"
    r"FileNotFoundError|IsADirectoryError|NotADirectoryError|PermissionError|BadZipFile)\b")
# A format placeholder left unfilled ("Expected suffix identifier after {first_char}").
PLACEHOLDER = re.compile(r"\{[a-z][a-z_]*\}")

# "file:line:col:" at the start of the first line.
FILE_LINE_COL = r"^[^\s:][^:]*:\d+:\d+: error: "


@dataclass
class Case:
    id: str
    family: str  # onnx | mlir | runtime
    what: str  # the mutation, for the summary
    argv: list[str] = field(default_factory=list)  # [tool, args...] for tool cases
    api: str | None = None  # a scenario name of runtime_cases.API for Python-API cases
    params: dict = field(default_factory=dict)  # the scenario's parameters
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> content
    special: dict[str, str] = field(default_factory=dict)  # relative path -> "dir" | "fifo" | "symlink:TARGET"
    expect: str = "any"  # error | ok | any
    locators: list[str] = field(default_factory=list)  # regexes; one must match the first stderr line
    env: dict[str, str] = field(default_factory=dict)  # runs in its own worker when set
    isolated: bool = False  # its own worker process (crash-prone, or changes process state)
    must_not_exist: list[str] = field(default_factory=list)  # paths that must be absent after an error
    scratch: list[str] = field(default_factory=list)  # files an API scenario makes itself (not outputs)
    timeout: float = 60.0

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["files"] = {k: base64.b64encode(v).decode() for k, v in self.files.items()}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        d = dict(d)
        d["files"] = {k: base64.b64decode(v) for k, v in d["files"].items()}
        return cls(**d)


@dataclass
class Outcome:
    """What one run of a case did (filled by the runner from the worker's report)."""

    returncode: int | None  # None: the worker died or hung on this case
    stderr: str = ""
    stdout_len: int = 0
    died: str | None = None  # "signal N" / "timeout" / "exit N" when the worker did not report
    listing_changed: list[str] = field(default_factory=list)  # paths created/removed/modified
    api_error: str | None = None  # "TypeName: message" when an API scenario raised
    api_note: str | None = None  # a scenario's own failure (wrong result, hung fork child)
    specials_broken: list[str] = field(default_factory=list)  # a FIFO/symlink/dir replaced
    seconds: float = 0.0  # wall time of the case (for a worker of its own: with the start-up)


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def judge(case: Case, out: Outcome) -> list[str]:
    """The oracle: the list of problems (empty: the case passed)."""
    problems: list[str] = []
    if out.died is not None:
        return [f"crashed or hung: {out.died}"]
    err = out.stderr
    if "Traceback" in err:
        problems.append("traceback in stderr")
    if "internal error" in err:
        problems.append("internal error")
    if out.api_note:
        problems.append(out.api_note)
    if PYTHON_EXCEPTION.search(err if case.api is None else (out.api_error or "")):
        problems.append("a Python exception in the message")
    if re.search(r"\w+Warning: ", err):
        problems.append("a Python warning in stderr")
    if PLACEHOLDER.search(err):
        problems.append("an unfilled {placeholder} in the message")
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in err):
        problems.append("control characters in stderr")
    if out.specials_broken:
        problems.append("clobbered: " + ", ".join(out.specials_broken))
    failed = out.returncode != 0
    message = out.api_error if case.api else first_line(err)
    if failed:
        if case.expect == "ok":
            problems.append("valid input refused")
        if not message:
            problems.append("no error message")
        else:
            if case.api is None:
                lines = [ln for ln in err.splitlines() if ln.strip()]
                if len(lines) > MAX_STDERR_LINES:
                    problems.append(f"{len(lines)} stderr lines, not one diagnostic")
                if any(len(ln) > MAX_LINE for ln in lines):
                    problems.append(f"a stderr line of {max(map(len, lines))} characters")
            elif "\n" in (message or "").strip():
                problems.append("multi-line exception message")
            if case.locators and not any(re.search(p, message) for p in case.locators):
                problems.append("message not located")
        written = [p for p in out.listing_changed if p not in case.scratch]
        if written:
            problems.append("wrote files on error: " + ", ".join(written[:3]))
        present = [p for p in case.must_not_exist if p in out.listing_changed]
        if present:
            problems.append("output target exists after the error: " + ", ".join(present))
    elif case.expect == "error":
        problems.append("invalid input accepted")
    return problems


def listing(root: str) -> dict[str, tuple]:
    """path -> (kind, size, mtime_ns) of everything under ``root``."""
    found: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            kind = st.st_mode >> 12
            # data through a FIFO is not a file written (its mtime moves, nothing stays)
            found[os.path.relpath(full, root)] = (kind,) if kind == 0o01 else (kind, st.st_size, st.st_mtime_ns)
    return found


def diff_listing(before: dict, after: dict) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
