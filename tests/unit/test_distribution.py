"""Install hints name a command that works for this copy: memorybank is on no package index."""

from __future__ import annotations

import json

import pytest

from memorybank_core.distribution import _command_for, install_command


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        # `pip install -e ".[server]"` from a clone: the README's quickstart.
        (
            {"url": "file:///home/me/memorybank", "dir_info": {"editable": True}},
            "pip install -e '/home/me/memorybank[mcp]'",
        ),
        ({"url": "file:///home/me/memorybank", "dir_info": {}}, "pip install '/home/me/memorybank[mcp]'"),
        (
            {"url": "file:///tmp/dist/memorybank-0.1.0-py3-none-any.whl", "archive_info": {}},
            "pip install '/tmp/dist/memorybank-0.1.0-py3-none-any.whl[mcp]'",
        ),
        ({"url": "file:///srv/my%20clone", "dir_info": {}}, "pip install '/srv/my clone[mcp]'"),
        (
            {"url": "https://example.org/memorybank.git", "vcs_info": {"vcs": "git", "commit_id": "0" * 40}},
            "pip install 'memorybank[mcp] @ git+https://example.org/memorybank.git'",
        ),
    ],
)
def test_the_hint_installs_the_extra_from_where_memorybank_came_from(
    direct_url: dict[str, object], expected: str
) -> None:
    assert _command_for(json.dumps(direct_url), "mcp") == expected


def test_a_copy_from_a_package_index_gets_the_index_form() -> None:
    assert _command_for(None, "server") == "pip install 'memorybank[server]'"


def test_an_unreadable_record_still_names_the_extra() -> None:
    assert "memorybank[server]" in _command_for("not json", "server")


def test_this_checkouts_editable_install_is_named_by_its_path() -> None:
    # The test environment is `pip install -e ".[all,test]"` (README, .ci/run).
    assert install_command("server").startswith("pip install -e '/")
    assert install_command("server").endswith("[server]'")
