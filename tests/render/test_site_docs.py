"""The commands the README and docs/ci.md show are commands the tree accepts: each `groupspec ...`
line of their code blocks parses with the real argument parser (no unknown option, no missing
argument). A renamed option then fails here instead of in a reader's terminal or CI.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from groupspec.cli import build_parser
from model.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/ci.md", "docs/guide.md")
_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.S)
_COMMAND = re.compile(r"(?:^|\s|/)groupspec (?=[a-z])(.*)")


def commands(text: str) -> list[str]:
    """`groupspec ...` command lines of the fenced code blocks, continuation lines joined, shell
    comments and GitHub expressions (`${{ ... }}`) removed."""
    out = []
    for block in _BLOCK.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"\$\{\{[^}]*\}\}", "1", line.split(" #", 1)[0].strip())
            m = _COMMAND.search(line)
            if m and not line.startswith(("groupspec:", "groupspec fuzz:", "groupspec check:")):
                out.append(m.group(1).split(" && ")[0].split(" | ")[0])
    return out


def refused(command: str) -> str:
    """Why the parser refuses `groupspec COMMAND` ('' when it accepts it)."""
    root, _ = build_parser()
    try:
        args = shlex.split(command)
        ns, extra = root.parse_known_args(args)
        if extra:
            return f"unrecognized arguments: {' '.join(extra)}"
    except BadInput as e:
        return str(e)
    except SystemExit as e:
        return f"exit {e.code}"
    return ""


@pytest.mark.parametrize("doc", DOCS)
def test_every_command_shown_parses(doc: str) -> None:
    found = commands((ROOT / doc).read_text(encoding="utf-8"))
    assert found, f"{doc}: no groupspec command found in its code blocks"
    assert [(c, refused(c)) for c in found if refused(c)] == []


def test_a_wrong_command_is_refused() -> None:
    """Negative control: an unknown option, a missing required option, an unknown command."""
    text = "```\n$ groupspec check --no-such-option\n$ groupspec diff --table kafka-4\n$ groupspec nosuch\n```\n"
    found = commands(text)
    assert found == ["check --no-such-option", "diff --table kafka-4", "nosuch"]
    assert all(refused(c) for c in found)
