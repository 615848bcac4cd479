"""Where the site (`groupspec render`) shows a table row: the one link every page and diagram uses.

A row lives on its state's page at its own anchor: `ROOT/state-<State>.html#<row id>`. The row
id's slashes stay in the fragment: a %2F in a file:// path does not open in chromium. Quoting keeps
the link safe inside an HTML attribute as well, so no page escapes it a second time.
"""

from __future__ import annotations

from urllib.parse import quote


def row_href(row_id: str, root: str = "") -> str:
    """The link to `row_id` from a page that sees the site at `root` ("" or a prefix ending in "/")."""
    state = row_id.split("/", 1)[0]
    return f"{root}state-{quote(state)}.html#{quote(row_id, safe='/')}"


def row_url(row_id: str, site_root: str) -> str:
    """The link to `row_id` from a page beside the site, which lives at `site_root` (any trailing "/")."""
    return row_href(row_id, site_root.rstrip("/") + "/")


__all__ = ["row_href", "row_url"]
