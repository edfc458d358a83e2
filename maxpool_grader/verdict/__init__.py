"""The verdict: every graded test decided outside the student's kernel, above the exercise.

``verdicts`` runs the student's code cells in a separate limited process (``untrusted``,
the program: standard library and NumPy only, started by ``process`` in the submission's
sandbox, cold or from the verdict zygote), calls the function across a pipe and reads back
only plain arrays of numbers (``remote``), then judges them with the exercise's checks in
the grader. ``shortcuts`` refuses autograd libraries and the grader itself;
``kernel_zygote`` is the program of the kernel zygote, which imports the checks the hidden
cells call once, before it forks each kernel.

May import: ``names``, ``exercise``, ``sandbox``.
"""
