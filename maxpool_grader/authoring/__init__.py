"""``maxpool-grader check [--fix]``: the source notebook against the grader.

* ``check``: the command, each problem with its cell and fix; ``--fix`` repairs the
  notebook and refreshes the release and the sample class;
* ``cells``: the hidden and visible test cells, written from the exercise's checks;
* ``answer``: the solution, Part A's answer and rubric, and what must never leak.

May import: ``names``, ``exercise``, ``course``, ``grading``.
"""
