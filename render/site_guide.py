"""The guide's pictures: docs/guide/NAME.svg, the sequence diagram of each guide scenario
(tests/scenarios/guide/NAME.json) run on the table, drawn by the trace renderer.

`groupspec render --guide-svg docs/guide` rewrites them; tests/render/test_guide.py fails when a
committed picture differs from what the table draws now, so docs/guide.md cannot drift from the
table. Each file is standalone (its stylesheet inside), so a code host shows it as an image.
"""

from __future__ import annotations

import glob
import os
from typing import Final, Optional

from model.atomic import write_text_atomic
from model.dsl import Table

from render.site_model import ROOT

GUIDE_SCENARIOS: Final = os.path.join(ROOT, "tests", "scenarios", "guide")
DEFAULT_DIR: Final = "docs/guide"


def guide_files() -> list[str]:
    return sorted(glob.glob(os.path.join(GUIDE_SCENARIOS, "*.json")))


def guide_svg(path: str, table: Optional[Table] = None) -> str:
    """The standalone SVG of a guide scenario file's one scenario."""
    from render.sequence import CSS, svg
    from render.trace import trace_of_scenario

    picture = svg(trace_of_scenario(path, table=table), None)
    head, sep, rest = picture.partition(">")
    return f"{head}{sep}\n<style><![CDATA[{CSS}]]></style>{rest}\n"


def guide_svgs() -> dict[str, str]:
    """File name (NAME.svg) -> picture, for every guide scenario."""
    return {os.path.splitext(os.path.basename(p))[0] + ".svg": guide_svg(p) for p in guide_files()}


def write_guide_svgs(directory: str) -> list[str]:
    written = []
    for name, text in guide_svgs().items():
        target = os.path.join(directory, name)
        write_text_atomic(target, text)
        written.append(target)
    return written
