"""The machine's own programs the suite drives for real (Debian's Chromium and Prometheus).

``scripts/check`` installs them beside the tests (``scripts/machine-packages``), holding an
exclusive lock on the file ``VIVY_MACHINE_SETUP`` names until it is done; a test that needs
one of them calls :func:`wait_for_machine_packages` before looking for it. Outside
``scripts/check`` nothing is being installed and the call returns at once.
"""

from __future__ import annotations

import fcntl
import os


def wait_for_machine_packages() -> None:
    """Block until ``scripts/check``'s install of the machine's packages has ended (a shared
    lock on its lock file, taken and let go)."""
    path = os.environ.get("VIVY_MACHINE_SETUP")
    if not path or not os.path.exists(path):
        return
    with open(path, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        fcntl.flock(lock, fcntl.LOCK_UN)
