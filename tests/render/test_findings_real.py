"""The fuzz report page of a real run: `groupspec fuzz --target serve --bug heartbeat-empty-accepted`
finds the seeded bug; render.findings.write_report_html draws every class that has a scenario
file, each naming the finding at the step where serve departs from the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from render.findings import write_report_html

ROOT = Path(__file__).resolve().parents[2]


def test_the_report_page_of_a_real_fuzz_run(tmp_path: Path) -> None:
    report = tmp_path / "report"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "groupspec.cli", "fuzz", "--target", "serve", "--bug",
                           "heartbeat-empty-accepted", "--minutes", "0.5", "--report", str(report)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]  # a finding
    doc = json.loads((report / "report.json").read_text())
    drawn = [c for c in doc["classes"] if c.get("scenario")]
    assert drawn
    page = Path(write_report_html(str(report))).read_text()
    assert page.count("<svg") == len(drawn)
    assert page.count('class="violation"') == len(drawn)
    assert page.count("serve departs from the model") >= len(drawn)
    assert "Heartbeat" in page and "at step" in page
    first = next(c for c in drawn if c["api"] == "Heartbeat")
    assert json.dumps(first["actual"]).replace('"', "&quot;") in page
