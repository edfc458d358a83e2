"""``maxpool-grader serve``: feedback while the assignment is open.

* ``service``: the core (its workers, its event loop, the queue handed to them), which holds
  the others: ``policy``: ``c.Serve``, the roster, refusals and limits; ``queue``: the
  persistent queue; ``grading_job``: what a grading worker does with one attempt (and
  ``--cluster``); ``exchange``: the exchange watcher, with its owner check; ``signin``: who
  a request is: links, sessions and their cookies, revoking and rotating, JupyterHub's OAuth;
  ``pages``: the pages made of our own data, from ``templates/`` (Jinja, autoescaped), which
  the exchange way releases and the web way serves; ``lti`` (``c.Lti``, the tool's key and
  registration), ``lti_store`` (nonces, states, the course the service is bound to, the LMS's addresses, who
  each LMS user is),
  ``outbox`` (the scores waiting for the LMS) and ``passback`` (posting them); ``standing``:
  which attempt counts (``c.Serve.counts``) and what every attempt's page says of it;
* the web way, which the core is given and never imports: ``handler`` (what every page
  does: headers, the session cookies signin decides on), ``web`` (tornado, its handlers and
  server), ``hub`` (the pages of signing in with JupyterHub), ``lti_web`` (LTI launches:
  pylti1p3's tornado adapter, the launch's course and roles), ``lti_refusals`` (the sentence
  of each refused launch), ``lti_frame`` (a login in the LMS's frame: on in a new tab);
* ``cli``: the ``serve`` and ``tokens`` command lines; ``lti_roster``: ``roster --from-lti``
  and ``lti-config``.

May import: ``names``, ``exercise``, ``sandbox``, ``verdict``, ``glue``, ``course``, ``backend``, ``cluster``,
``grading``.
"""
