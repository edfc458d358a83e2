"""The verdict: every graded test decided outside the student's kernel, above the exercise.

``verdicts`` runs the student's code cells in a separate limited process (``untrusted``,
the program: standard library and NumPy only, started by ``process`` in the submission's
sandbox, cold or from the verdict zygote), hands the function its inputs in a shared memory
the grader reads back itself (``inputs``), reads back only plain arrays of numbers (``remote``), every
reply read with bounds and checked field by field (``replies``), then judges them with the
exercise's checks in the grader. ``shortcuts`` refuses autograd libraries and the grader
itself; ``evidence`` runs the notebook's self-check against the function for a report's
evidence, and starts the notebook's cells again in a new process for a report that needs the
function before any call. ``fairness`` judges a time limit on the CPU the box received: a test
whose box was starved is graded again, never failed.

May import: ``names``, ``exercise``, ``sandbox``.
"""
