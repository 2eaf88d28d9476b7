"""The PostgreSQL engine behind the storage port (first part; see :mod:`.stores`).

PostgreSQL with pgvector is the shared engine of a fleet of bot processes (the Fleet issue);
SQLite stays the default. :mod:`.schema` holds the migrations (one per logical schema version
of :mod:`vivy.storage.schema`), :mod:`.db` the connection owner, and the area modules
(:mod:`.meta`, :mod:`.buffers`, :mod:`.notes`, :mod:`.evidence`) the SQL, run through the
owner by the store classes of :mod:`.stores`.
"""
