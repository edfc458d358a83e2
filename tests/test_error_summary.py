"""The one line the instructor reads when a job failed (course/jobs.py:error_summary): the
exception's type and message and the last frame it passed through, never nbgrader's closing
"see the above traceback" (issue 37.6). The logs below are nbgrader's, as its API returned
them for a real ``maxpool-grader grade`` (paths shortened); the integration side, with the
summary line, the per-student log and serve's per-attempt log, is in tests/test_grade_faults.py
and tests/test_serve_term.py."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from maxpool_grader.course.jobs import error_summary

SITE = "/venv/lib/python3.11/site-packages"

# autograded/<student> was a file: nbgrader's makedirs failed in a frozen module (no line of code
# below its frame), then nbgrader raised its own "Please see the above traceback".
NOT_A_DIRECTORY = f"""[INFO] Creating/updating student with ID 'forum_verbatim': {{}}
[ERROR] There was an error processing assignment: /c/submitted/forum_verbatim/max_pool_backward
[ERROR] Traceback (most recent call last):
      File "{SITE}/nbgrader/converters/base.py", line 386, in convert_notebooks
        self.init_assignment(gd['assignment_id'], gd['student_id'])
      File "{SITE}/nbgrader/converters/autograde.py", line 75, in init_assignment
        super(Autograde, self).init_assignment(assignment_id, student_id)
      File "{SITE}/nbgrader/converters/base.py", line 297, in init_assignment
        os.makedirs(os.path.dirname(path))
      File "<frozen os>", line 225, in makedirs
    NotADirectoryError: [Errno 20] Not a directory: '/c/autograded/forum_verbatim/max_pool_backward'

[ERROR] There was an error processing assignment 'max_pool_backward' for student 'forum_verbatim'
[ERROR] Please see the the above traceback for details on the specific errors on the above failures.
Traceback (most recent call last):
  File "{SITE}/nbgrader/utils.py", line 542, in capture_log
    app.start()
  File "{SITE}/nbgrader/converters/base.py", line 132, in start
    self.convert_notebooks()
  File "{SITE}/nbgrader/converters/base.py", line 468, in convert_notebooks
    raise NbGraderException(msg)
nbgrader.converters.base.NbGraderException: Please see the the above traceback for details on the specific errors \
on the above failures."""

# timestamp.txt held no time: dateutil's ParserError, then, while handling it, nbgrader's
# CourseDirectory.fail, which does not exist (nbgrader 0.9's bug): the last exception counts.
CHAINED = f"""[ERROR] There was an error processing assignment: /c/submitted/forum_verbatim/max_pool_backward
[ERROR] Traceback (most recent call last):
      File "{SITE}/nbgrader/coursedir.py", line 335, in get_existing_timestamp
        return parse_utc(timestamp)
               ^^^^^^^^^^^^^^^^^^^^
      File "{SITE}/dateutil/parser/_parser.py", line 637, in parse
        raise ParserError("Unknown string format: %s", timestr)
    dateutil.parser._parser.ParserError: Unknown string format: not a time at all

    During handling of the above exception, another exception occurred:

    Traceback (most recent call last):
      File "{SITE}/nbgrader/converters/base.py", line 386, in convert_notebooks
        self.init_assignment(gd['assignment_id'], gd['student_id'])
      File "{SITE}/nbgrader/coursedir.py", line 337, in get_existing_timestamp
        self.fail(
        ^^^^^^^^^
    AttributeError: 'CourseDirectory' object has no attribute 'fail'

[WARNING] Removing failed assignment: /c/autograded/forum_verbatim/max_pool_backward
[ERROR] Please see the the above traceback for details on the specific errors on the above failures.
Traceback (most recent call last):
  File "{SITE}/nbgrader/converters/base.py", line 468, in convert_notebooks
    raise NbGraderException(msg)
nbgrader.converters.base.NbGraderException: Please see the the above traceback for details on the specific errors \
on the above failures."""


def test_a_frame_without_a_line_of_code_still_gives_the_exception_and_its_frame():
    """The bug this pins down: the line after a frozen module's frame was taken for its code
    and skipped, so the exception was lost and nbgrader's "see the above traceback" shown."""
    assert error_summary(NOT_A_DIRECTORY) == (
        "NotADirectoryError: [Errno 20] Not a directory: '/c/autograded/forum_verbatim/max_pool_backward' "
        "(at <frozen os>:225 in makedirs)")


def test_of_chained_exceptions_the_last_one_and_its_last_frame_are_shown():
    assert error_summary(CHAINED) == ("AttributeError: 'CourseDirectory' object has no attribute 'fail' "
                                      "(at coursedir.py:337 in get_existing_timestamp)")


def test_a_traceback_nbgrader_raises_here_gives_its_type_message_and_last_frame():
    """nbgrader's own code, run here on a timestamp that holds no time (its ``parse_utc``, which
    no patch of ours replaces): whatever its version raises, the summary names it and the frame
    it was raised in."""
    from nbgrader.utils import parse_utc
    try:
        parse_utc("not a time at all")
    except Exception as problem:  # noqa: BLE001  whatever it is, it is summarised
        text, raised = traceback.format_exc(), problem
        last = traceback.extract_tb(sys.exc_info()[2])[-1]
    else:
        raise AssertionError("nbgrader took 'not a time at all' for a time")
    said = traceback.format_exception_only(raised)[-1].strip()  # the exception's line, as the log prints it
    assert error_summary(text) == f"{said} (at {Path(last.filename).name}:{last.lineno} in {last.name})"


def test_without_a_traceback_the_last_line_and_without_a_log_says_so():
    assert error_summary("[INFO] one\n[ERROR] the gradebook is locked\n\n") == "[ERROR] the gradebook is locked"
    assert error_summary("") == "no log" and error_summary(None) == "no log"
    only_nbgrader_s_closing = CHAINED.split("[WARNING]")[1]  # no traceback it points to: its own line, then
    assert error_summary(only_nbgrader_s_closing).startswith("nbgrader.converters.base.NbGraderException: Please see")


def test_a_log_cut_to_its_end_still_names_the_exception():
    """A Dask worker's error keeps the end of nbgrader's log (2,000 characters): the traceback's
    start is gone, its exception line is not (a worker of a --target install once could not
    find alembic; nbgrader's closing was shown)."""
    cut = NOT_A_DIRECTORY[NOT_A_DIRECTORY.index("        os.makedirs"):]
    assert "Traceback (most recent call last)" not in cut.split("[ERROR] There was")[0]
    assert error_summary(cut) == "NotADirectoryError: [Errno 20] Not a directory: " \
                                 "'/c/autograded/forum_verbatim/max_pool_backward'"
