"""``vivy demo``: the operator search URL it prints is served at that address while it runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path


def test_the_printed_operator_search_url_answers(tmp_path: Path) -> None:
    """The demo's "Operator search API (URL): N hits" line holds a URL that gives N hits."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "vivy.cli", "demo", "--linger", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "GEMINI_API_KEY": "",
            "MEMORY_GEMINI_TOKEN": "",
        },
    )
    try:
        assert demo.stdout is not None
        found = None
        for line in demo.stdout:
            found = re.match(r"Operator search API \((http://\S+)\): (\d+) hits", line)
            if found:
                break
        assert found is not None, "the demo printed no operator search line"
        with urllib.request.urlopen(found[1], timeout=10) as answer:
            assert answer.status == 200
            hits = json.load(answer)["results"]
        assert len(hits) == int(found[2]) > 0
        assert any("game night" in (h["title"] + h["summary"]).lower() for h in hits)
    finally:
        demo.terminate()
        demo.wait(timeout=30)
