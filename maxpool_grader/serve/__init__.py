"""``maxpool-grader serve``: feedback while the assignment is open.

* ``service``: the core (its workers, its event loop, the queue handed to them), which holds
  the others: ``policy``: ``c.Serve``, the roster, refusals and limits; ``queue``: the
  persistent queue; ``grading_job``: what a grading worker does with one attempt (and
  ``--cluster``); ``exchange``: the exchange watcher, with its owner check; ``signin``: who
  a request is: links, sessions and their cookies, revoking and rotating, JupyterHub's OAuth;
  ``pages``: the pages made of our own data, from ``templates/`` (Jinja, autoescaped), which
  the exchange way releases and the web way serves; ``standing``: which attempt counts
  (``c.Serve.counts``) and what every attempt's page says of it; ``lti_service``: the
  service's LTI (the ``lti`` package's launch store and passback, given the score of each
  attempt that counts and the final feedback released);
* the web way, which the core is given and never imports: ``handler`` (what every page
  does: headers, the session cookies signin decides on), ``web`` (tornado, its handlers and
  server), ``hub`` (the pages of signing in with JupyterHub), ``lti_web`` (LTI's login and
  launch pages, with lti's tornado adapter: the launch's course and who it is), ``lti_frame``
  (a login in the LMS's frame: on in a new tab);
* ``cli``: the ``serve`` and ``tokens`` command lines.

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``, ``glue``, ``course``, ``backend``, ``cluster``,
``grading``, ``lti``.
"""
