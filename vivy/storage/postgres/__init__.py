"""The PostgreSQL engine behind the storage port.

PostgreSQL with pgvector is the shared engine of a fleet of bot processes;
SQLite stays the default. :mod:`.schema` holds the migrations (one per logical schema version
of :mod:`vivy.storage.schema`), :mod:`.db` the connection owner, and the area modules
(:mod:`.meta`, :mod:`.buffers`, :mod:`.notes`, :mod:`.evidence`, :mod:`.profiles`,
:mod:`.members`, :mod:`.reembed`, :mod:`.search`, :mod:`.context_reads`, :mod:`.maintenance`)
the SQL, run through the owner by the store classes of :mod:`.stores`, whose
:func:`~.stores.open_postgres_store` opens the engine as a :class:`~vivy.storage.port.Store`;
:mod:`.readonly` is the operator commands' view.

Not done yet: ``VIVY_DB`` does not select this engine (the app's and CLI's wiring).
"""
