"""Opening a store must never drop the SQLite locks this process already holds on the same database file.

POSIX ties advisory locks to (process, file): closing ANY descriptor of the file releases them all. A store that
opened and closed the database file by hand while another store (or another thread's connection) of the same
process had it open let a second process believe it held the last connection, checkpoint and delete the WAL, and
leave this process reading a "malformed" database.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memdir import open_store

WRITER = textwrap.dedent(
    """
    import sys
    from memdir import open_store
    with open_store(sys.argv[1]) as store:
        for i in range(50):
            store.write(f"/memories/b{i}.md", b"from the other process " * 20)
    """
)


@pytest.mark.parametrize("layout", ["sqlite", "directory"])
def test_a_second_store_on_the_same_file_keeps_the_first_ones_locks(tmp_path: Path, layout: str) -> None:
    url = f"sqlite://{tmp_path / 'm.db'}" if layout == "sqlite" else str(tmp_path / "store")
    first = open_store(url)
    for i in range(50):
        first.write(f"/memories/a{i}.md", b"kept in this process " * 20)
    wal = tmp_path / "m.db-wal" if layout == "sqlite" else tmp_path / "store" / ".memdir" / "index.db-wal"
    assert wal.exists()
    # A second store on the same file, in this process, while the first holds connections...
    second = open_store(url, namespace="other")
    second.write("/memories/x.md", b"x")
    # ...then another process writes and closes: it must not think it held the last connection.
    done = subprocess.run([sys.executable, "-c", WRITER, url], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert wal.exists(), "the other process deleted the WAL this process still uses"
    assert len(first.list_files()) == 100
    assert first.read("/memories/a7.md").content.startswith(b"kept")
    second.close()
    first.close()
