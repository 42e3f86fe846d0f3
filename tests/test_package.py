"""The package surface and the code-quality gates (type checking and lint run as part of the suite)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memdir
from memdir import MemoryStore, MemoryTool

ROOT = Path(__file__).resolve().parent.parent


def test_public_names_are_unique_and_all_exist() -> None:
    # Their order is ruff's RUF022 (checked by the lint gate below).
    assert len(set(memdir.__all__)) == len(memdir.__all__)
    for name in memdir.__all__:
        assert hasattr(memdir, name), name


def test_the_tool_never_raises_into_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(MemoryStore):
        def list_files(self, path: object = None) -> list[memdir.Entry]:  # type: ignore[override]
            raise RuntimeError("/secret/host/path exploded")

    result = MemoryTool(Broken()).execute({"command": "view", "path": "/memories"})
    assert result.is_error
    assert result.text == (
        "Error: Internal error in the memory tool while running `view`; the command may not have completed. "
        "The details are in the memdir log."
    )
    assert "/secret/host/path" not in result.text
    assert "exploded" in caplog.text  # the traceback goes to the log, not to the model


def test_storage_errors_reach_the_model_without_host_paths(tmp_path: Path) -> None:
    store = memdir.open_store(str(tmp_path / "s"))
    MemoryTool(store).execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    (tmp_path / "s" / "memories").rename(tmp_path / "elsewhere")
    (tmp_path / "s" / "memories").symlink_to(tmp_path / "elsewhere")
    result = MemoryTool(store).execute({"command": "view", "path": "/memories/a.md"})
    assert result.is_error
    assert str(tmp_path) not in result.text
    assert "replaced by a link" in result.text


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks"],
        [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_code_quality_gate(command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
