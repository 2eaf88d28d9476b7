"""The PostgreSQL engine behind the storage port (first part).

PostgreSQL with pgvector is the shared engine of a fleet of bot processes (the Fleet issue);
SQLite stays the default. :mod:`.schema` holds the migrations (one per logical schema version
of :mod:`vivy.storage.schema`), :mod:`.db` the connection owner, and the area modules
(:mod:`.meta`, :mod:`.buffers`, :mod:`.notes`, :mod:`.evidence`, :mod:`.profiles`,
:mod:`.members`, :mod:`.reembed`) the SQL, run through the owner by the store classes of
:mod:`.stores`; :mod:`.readonly` is the operator commands' view.

Not done yet: the search area (:class:`~vivy.storage.port.SearchStore`: vector search through
the HNSW index with the guild filter inside the scan, keyword search with ``ts_rank_cd``, the
context reads). Until it is, there is no ``open_postgres_store`` and ``VIVY_DB`` cannot name
a PostgreSQL database.
"""
