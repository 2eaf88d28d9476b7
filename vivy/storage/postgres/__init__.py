"""The PostgreSQL engine behind the storage port: the shared engine of a fleet of bot processes.

:mod:`.db` owns the connection and migrates it (:mod:`.schema`, one migration per schema
version of :mod:`vivy.storage.sqlite.schema`); :mod:`.leases` holds the shards' leases;
:mod:`.search` and :mod:`.keywords` are its vector and keyword search; :mod:`.stores` opens
the engine as a :class:`~vivy.storage.port.Store`; :mod:`.readonly` is the operator
commands' read-only view.
"""
