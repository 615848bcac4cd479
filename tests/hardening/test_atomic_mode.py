"""Files the one writer publishes get the mode any new file gets (0666 less the umask), not
mkstemp's owner-only 0600: reports and site pages are read by CI artifact uploaders and web servers."""
import os
import stat
import tempfile
from pathlib import Path

from model.atomic import write_bytes_atomic, write_text_atomic


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_published_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomic(str(tmp_path / "page.html"), "<p>hi</p>")
        write_bytes_atomic(str(tmp_path / "data.bin"), b"\x00")
        assert mode(tmp_path / "page.html") == 0o644
        assert mode(tmp_path / "data.bin") == 0o644
        os.umask(0o077)
        write_text_atomic(str(tmp_path / "private.txt"), "x")
        assert mode(tmp_path / "private.txt") == 0o600
    finally:
        os.umask(old)


def test_negative_control_mkstemp_alone_is_owner_only(tmp_path: Path) -> None:
    """What the writer did before: the check above would have failed on it."""
    old = os.umask(0o022)
    try:
        fd, name = tempfile.mkstemp(dir=tmp_path)
        os.close(fd)
        assert mode(Path(name)) != 0o644
    finally:
        os.umask(old)
