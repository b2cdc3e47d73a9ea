"""Progress of long commands on a terminal (rich), silence when piped.

``compile_progress()`` yields the ``progress(stage, detail)`` callback ``dlc.compile``
takes (driver.py), rendered as one transient rich line on stderr: the stage, and for the
schedule stage the kernel count. ``task_progress(total, what)`` is a plain counted bar
(the conformance runner). Both yield ``None`` / a no-op when stderr is not a terminal,
so piped output and logs stay exactly as they were.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def interactive(stream=None) -> bool:
    stream = sys.stderr if stream is None else stream
    return bool(getattr(stream, "isatty", lambda: False)())


@contextmanager
def compile_progress(stream=None) -> Iterator[Callable | None]:
    """The callback for ``dlc.compile(progress=...)``, or None off a terminal."""
    if not interactive(stream):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr if stream is None else stream)
    with Progress(SpinnerColumn(), TextColumn("compiling: {task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("load", total=None)

        def report(stage: str, detail) -> None:
            if detail is None:
                bar.update(task, description=stage, total=None, completed=0)
            else:
                done, total = detail
                bar.update(task, description=f"{stage} (kernel {done + 1}/{total})", total=total,
                           completed=done)

        yield report


@contextmanager
def task_progress(total: int, what: str, stream=None) -> Iterator[Callable[[str], None]]:
    """``advance(label)`` after each of ``total`` tasks; a no-op off a terminal."""
    if not interactive(stream):
        yield lambda label="": None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr if stream is None else stream)
    with Progress(TextColumn(f"{what}: {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("", total=total)
        yield lambda label="": bar.update(task, advance=1, description=label)
