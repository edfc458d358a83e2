"""The instructor's command line, ``maxpool-grader``: on top of every capability.

* ``entry``: the console script; for ``grade`` it hears Ctrl-C before the imports;
* ``main``: the commands (``grade``, ``serve``, ``tokens``, ``roster``, ``collect-lms``,
  ``export-lms``, ``check``, ``doctor``, ``cluster-certs``, ``add-to-course``), each handing over to its
  package;
* ``doctor``: which guarantees hold on this machine for this user;
* ``add_to_course``: ``add-to-course``'s options and what it prints;
* ``exchange_check``: ``doctor``'s look at the exchange, and the students' config, from a student's side;
* ``settings_doc``: docs/settings.md made from the settings' declarations.

May import: every package before it.
"""
