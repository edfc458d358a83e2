"""LTI 1.3 (docs/lti.md): the course's registration with its LMS and the protocol's parts,
which ``serve`` uses. This package knows nothing of the service: what it needs of it (a
request's handler, the score of an attempt, a released final feedback, ending a student's
session) is given to it, never imported.

* ``tool``: ``c.Lti``, the tool's key and the registration ``lti-config`` prints, which of a
  launch's roles count (the course's membership roles alone), the requests' timeout
  (``timed_session``) and pylti1p3's client of the platform's services (``ServiceConnector``);
* ``store``: the OIDC nonces and states (each taken once, in SQLite), the one course the
  service is bound to, the course's service addresses, and which roster student each LMS
  user (``sub``) is, recorded in ``lti.json``;
* ``launch``: pylti1p3's tornado adapter, with the checks the library leaves to the tool
  (``azp``, ``exp``, the message type, the key set read again at most once a minute);
* ``refusals``: the sentence of each refused launch;
* ``outbox``: the scores waiting for the LMS's gradebook, in SQLite until the platform takes
  them; ``passback``: posting them (Assignment and Grade Services), with backoff;
* ``roster``: ``roster --from-lti`` (Names and Roles, never more than a fifth of the class
  removed without ``--yes``) and ``lti-config``.

May import: ``names``, ``glue``, ``course``.
"""
