"""The SQLite engine behind the storage port, the embedded default.

:mod:`.db` owns the connection and migrates it (:mod:`.schema`), with :mod:`.writer_lock`
keeping one writing process per file; :mod:`.search` and :mod:`.fts` are its vector and
keyword search; :mod:`.stores` opens the engine as a :class:`~vivy.storage.port.Store`;
:mod:`.checks` and :mod:`.readonly` are the operator commands' read-only view.
"""
