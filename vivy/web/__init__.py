"""The operator's HTTP surface: ``/metrics``, the operator memory API and the memory page.

:class:`~vivy.web.server.OperatorServer` serves them on one port with Hypercorn (under
asyncio or trio); :mod:`vivy.web.asgi` routes them with Starlette behind the access rules of
:mod:`vivy.web.tokens`; :mod:`vivy.web.memory` is the page's small interface to the storage
port and the retriever, and :mod:`vivy.web.views` renders what it returns.
"""
