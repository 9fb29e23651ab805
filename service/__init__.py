"""The service kit: what every Deniable server (the aggregator, the relay) stands on.

Each service is a Flask app built by its own factory from the same parts, as Janus's
``core`` crate carries its leader and its helper:

* :mod:`.app`: the Flask app with loaded settings, the body limit, exact JSON, the
  problem+json handlers, and the headers every response carries;
* :mod:`.problems`: every error response as RFC 9457 ``application/problem+json``, and
  the strict JSON reader of request bodies;
* :mod:`.settings`: settings tables (defaults < environment < ``config``), their parsers
  and the rows both services share;
* :mod:`.serving`: gunicorn managing the processes, waitress reading the requests;
* :mod:`.limits`: rate limits per client address and per enrolment token;
* :mod:`.cors`: cross-origin access for listed origins, on the routes a service names;
* :mod:`.metrics`: Prometheus metrics;
* :mod:`.datadir`: a data directory and files private to the server's user;
* :mod:`.masking`: credentials masked out of settings before they are shown;
* :mod:`.cli` and :mod:`.terminal`: the command lines' parser, argument types, settings
  output, one-line errors and tables (the exit statuses are the core's,
  :mod:`deniable.terminal`).

The kit imports the core (``deniable``) and never a service or the device client.  It
needs the ``server`` extra; importing this package alone does not import Flask.
"""

__all__: list[str] = []
