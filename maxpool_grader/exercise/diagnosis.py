"""Why a solution cannot be tested: code that does not compile, a missing or renamed
function, a signature without ``stride``.

Python reports only the first syntax error of a cell. ``compile_problems`` repairs
each error it understands (an indentation slip, an assignment split over two lines)
and compiles again, so a student learns about every problem at once, each with the
line number of the cell as submitted and a hint.
"""

from __future__ import annotations

import inspect
import io
import re
import tokenize
from dataclasses import dataclass

from ..names import FUNCTION

SIGNATURE = "max_pool_backward(d_output, x, pool_size, stride=None)"
MAX_PROBLEMS = 10


@dataclass(frozen=True)
class CompileProblem:
    line: int  # 1-based, in the cell as submitted
    text: str  # that line
    error: str  # Python's own message
    hint: str

    def describe(self) -> str:
        return f"line {self.line}: {self.error}\n    {self.text.strip()}\n  Hint: {self.hint}"


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _previous_code_line(lines: list[tuple[int, str]], index: int) -> int | None:
    """Index of the line where the logical line before ``index`` starts.

    Tokenizing skips the inside of strings and brackets: a docstring's lines are not
    statements, so its first line is the one whose indentation counts.
    """
    text = "\n".join(t for _, t in lines[:index]) + "\n"
    starts: list[int] = []
    at_start = True
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NEWLINE:
                at_start = True
            elif at_start and token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                                                 tokenize.DEDENT, tokenize.ENDMARKER):
                starts.append(token.start[0] - 1)
                at_start = False
    except (tokenize.TokenError, SyntaxError):
        pass
    if starts:
        return starts[-1]
    for back in range(index - 1, -1, -1):
        stripped = lines[back][1].strip()
        if stripped and not stripped.startswith("#"):
            return back
    return None


def _shift_block(lines: list[tuple[int, str]], start: int, by: int) -> None:
    """Shift line ``start`` and the following lines indented at least as deep by ``by``."""
    depth = _indent(lines[start][1])
    for index in range(start, len(lines)):
        number, text = lines[index]
        if index > start and text.strip() and _indent(text) < depth:
            break
        if text.strip():
            lines[index] = (number, " " * max(0, _indent(text) + by) + text.lstrip(" \t"))


def _repair(lines: list[tuple[int, str]], error: SyntaxError) -> CompileProblem | None:
    """Describe ``error`` and repair ``lines`` in place; None when it cannot be repaired."""
    index = (error.lineno or 1) - 1
    if not 0 <= index < len(lines):
        return None
    number, text = lines[index]
    message = f"{type(error).__name__}: {error.msg}"
    previous = _previous_code_line(lines, index)
    # An expression left unfinished at the end of a line: `dx[...] =` / `a +` / `f(a,`.
    for candidate in (index, previous):
        if candidate is None or candidate + 1 >= len(lines):
            continue
        cand_number, cand_text = lines[candidate]
        code = cand_text.split("#")[0].rstrip()
        if re.search(r"(?<![=!<>])=$|[-+*/%,]$", code):
            following = lines[candidate + 1][1].strip()
            lines[candidate] = (cand_number, code + " " + following)
            del lines[candidate + 1]
            return CompileProblem(
                cand_number, cand_text, message if candidate == index else
                f"{message} (reported at line {number})",
                f"this statement is split over two lines (line {cand_number} ends with "
                f"'{code[-1]}'). Python ends a statement at the end of a line: join the two "
                f"lines into one, or wrap the expression in parentheses.")
    if isinstance(error, IndentationError) and previous is not None:
        prev_number, prev_text = lines[previous]
        here, there = _indent(text), _indent(prev_text)
        opens_block = prev_text.split("#")[0].rstrip().endswith(":")
        if error.msg.startswith("expected an indented block"):
            _shift_block(lines, index, there + 4 - here)
            return CompileProblem(number, text, message,
                                  f"the line after the ':' of line {prev_number} must be indented "
                                  "further than that line (4 more spaces).")
        if error.msg.startswith("unexpected indent") and not opens_block:
            _shift_block(lines, index, there - here)
            return CompileProblem(
                number, text, message,
                f"this line is indented by {here} spaces, but the line before it in the same "
                f"block (line {prev_number}) by {there}. Every line of a block must start in the "
                f"same column: align the indentation (4 spaces per level is the convention).")
        if error.msg.startswith("unindent does not match"):
            levels = sorted({_indent(t) for _, t in lines[:index] if t.strip()})
            target = min(levels or [0], key=lambda level: (abs(level - here), -level))
            _shift_block(lines, index, target - here)
            return CompileProblem(
                number, text, message,
                f"this line is indented by {here} spaces, which matches no enclosing block. "
                f"Align it with the block it belongs to ({target} spaces?).")
    if "inconsistent use of tabs" in str(error.msg):
        lines[:] = [(n, t.expandtabs(4)) for n, t in lines]
        return CompileProblem(number, text, message, "mixes tabs and spaces: indent with spaces only.")
    return None


def compile_problems(source: str) -> list[CompileProblem]:
    """Every syntax problem of ``source`` that can be found by repairing the ones before it.

    The last problem may be one that cannot be repaired automatically; its hint says so.
    An empty list means the source compiles.
    """
    lines = list(enumerate(source.split("\n"), start=1))
    problems: list[CompileProblem] = []
    while len(problems) < MAX_PROBLEMS:
        try:
            compile("\n".join(text for _, text in lines), "<solution cell>", "exec")
            return problems
        except SyntaxError as error:  # IndentationError and TabError are subclasses
            problem = _repair(lines, error)
            if problem is None:
                index = min(max((error.lineno or 1) - 1, 0), len(lines) - 1)
                number, text = lines[index] if lines else (1, "")
                problems.append(CompileProblem(
                    number, text, f"{type(error).__name__}: {error.msg}",
                    "look at this line and the end of the line before it (an unclosed bracket "
                    "or quote, a missing ':'). Problems after it, if any, show once it is fixed."))
                return problems
            problems.append(problem)
    return problems


# ------------------------------------------------------------------ the function itself
def _solution_source(history: list[str]) -> str | None:
    """The submitted solution cell among the executed cells (IPython's ``In``)."""
    defining = [cell for cell in history if re.search(rf"^\s*def\s+{FUNCTION}\b", cell, re.M)]
    if defining:
        return defining[-1]
    broken = [cell for cell in history if cell.strip() and compile_problems(cell)]
    return broken[-1] if broken else None


def why_missing(namespace: dict) -> str:
    """Explain, for the student, why ``max_pool_backward`` is not defined in a kernel."""
    return explain_missing([cell for cell in namespace.get("In", []) if isinstance(cell, str)])


def explain_missing(history: list[str]) -> str:
    """Explain why ``max_pool_backward`` is not defined after running the cells ``history``
    (IPython's ``In`` in a kernel, the solution cell alone out of process)."""
    source = _solution_source(history)
    if source is not None:
        problems = compile_problems(source)
        if problems:
            found = "\n".join(problem.describe() for problem in problems)
            count = "a problem" if len(problems) == 1 else f"{len(problems)} problems"
            return (f"Your solution cell does not compile, so {FUNCTION} was never defined. "
                    f"It has {count} (line numbers count from the top of the cell):\n{found}")
        if re.search(rf"^\s*def\s+{FUNCTION}\b", source, re.M):
            return (f"Your solution cell defines {FUNCTION}, but it stopped with an error "
                    f"before the definition ran (or the name was deleted later). Run it on its "
                    f"own and fix the error it shows.")
    renamed = sorted({name for cell in history
                      for name in re.findall(r"^\s*def\s+(\w*back\w*|\w*grad\w*)\s*\(", cell, re.M)
                      if name != FUNCTION})
    if renamed:
        return (f"There is no function named {FUNCTION}; your code defines "
                f"{', '.join(renamed)}. The tests call {SIGNATURE}: keep that exact name.")
    return (f"There is no function named {FUNCTION}: the solution cell seems to be empty. "
            f"Define {SIGNATURE} in it.")


def accepts_stride(function) -> bool:
    """Whether ``function`` can be called with four positional arguments."""
    try:
        inspect.signature(function).bind(None, None, None, None)
    except TypeError:
        return False
    except ValueError:  # no signature available (a builtin): let the call decide
        return True
    return True


def missing_stride_message(function) -> str:
    try:
        shown = f"{FUNCTION}{inspect.signature(function)}"
    except (TypeError, ValueError):
        shown = FUNCTION
    return (f"Your function is defined as {shown}: it has no stride parameter, so this test "
            f"cannot call it with a stride. Without a stride it cannot pool overlapping windows "
            f"(stride < pool_size) or windows spaced apart (stride > pool_size). The assignment's "
            f"signature is {SIGNATURE}: add `stride=None`, use `stride = pool_size` when it is "
            f"None, and start window (k, l) at row k * stride_h and column l * stride_w.")
