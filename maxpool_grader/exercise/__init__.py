"""The exercise: 2-D max pooling's backward pass, and how an answer to it is judged.

* ``geometry`` (the output-grid rule and input validation) and ``reference`` (forward
  and backward, identical to PyTorch's ``max_pool2d``) say what is right.
* ``contract`` (every rule the notebook states, where it states it, the hidden test that grades
  it and the kinds of input it covers) and ``kinds`` (the kinds of valid input, declared once,
  and their seeded generator) say what a right answer is and on what; ``rules`` (what a right dx
  satisfies), ``judges`` (each rule judged alone, on a drawn case) and ``checks`` (the graded checks: ``HIDDEN_CHECKS``,
  ``VISIBLE_CHECKS``, with inputs, titles and points: fixed cases, then those drawn from the
  contract) say what is tested; the notebook's hidden cells are checked against ``checks`` (and
  written from it) by ``maxpool-grader check``, its text and self-check against ``contract``.
* ``bugs``, ``controls`` and ``catalogue``: realistic wrong and right implementations;
  ``source_marks`` tells look-alike mistakes apart by the student's code.
* ``reproducer`` (probe inputs, paste-able literals, arrays too large cut), ``search`` (the
  smallest failing input, the matching mistakes) and ``explain`` (the message a student
  reads); ``evidence`` (a mistake is named only where the whole page agrees), ``state`` (a
  mistake that shows only after another call); ``repeats`` (each explanation once per feedback
  page) and ``reveal`` (what a report
  may say before the release, guarded by the rubric's own phrases, and what comes back after).
* ``grading.run_check`` runs a check in the student's kernel; ``student_call`` calls the
  student's function so that only its results can cost points; ``diagnosis`` says why a
  solution cannot be tested at all; ``part_a`` is Part A's model answer and rubric.

Nothing here starts a process or imports nbgrader: the sandbox and everything after use it.

May import: ``names``.
"""
