"""The cluster map: tiers to owners, and the maps it refuses."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from groove.protocol.cluster import ClusterMap, ClusterMapError

MAP = """
home = "a"
spread = ["b", "c"]

[coordinators]
a = "tcp://127.0.0.1:5555"
b = "tcp://127.0.0.1:5556"
c = "tcp://127.0.0.1:5557"

[projects]
"/srv/shop" = "b"
"/srv/shop/vendor" = "c"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    return path


def test_home_prefixes_and_the_hash_say_who_owns_each_tier(tmp_path: Path) -> None:
    cluster = ClusterMap.load(write(tmp_path, MAP))
    assert cluster.owner("user") == cluster.owner("enterprise:acme") == "a"
    assert cluster.owner("project:/srv/shop") == cluster.owner("project:/srv/shop/api") == "b"
    assert cluster.owner("project:/srv/shop/vendor/lib") == "c"  # the longest prefix wins
    assert cluster.owner("project:/srv/shopping") in ("b", "c")  # not under /srv/shop: hashed
    spread = Counter(cluster.owner(f"project:/repos/r{i}") for i in range(400))
    assert set(spread) == {"b", "c"}  # never the home: it is not in `spread`
    assert min(spread.values()) > 150
    again = ClusterMap.load(write(tmp_path, MAP))
    assert all(again.owner(f"project:/repos/r{i}") == cluster.owner(f"project:/repos/r{i}") for i in range(400))
    assert cluster.by_owner(["user", "project:/srv/shop", "enterprise:acme"]) == {
        "a": ["user", "enterprise:acme"],
        "b": ["project:/srv/shop"],
    }


def test_without_spread_projects_hash_over_every_coordinator(tmp_path: Path) -> None:
    cluster = ClusterMap.load(write(tmp_path, MAP.replace('spread = ["b", "c"]', "")))
    assert {cluster.owner(f"project:/repos/r{i}") for i in range(100)} == {"a", "b", "c"}


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("home = 'a'\n[coordinators]\na = 'tcp://h:1'\n[projects]\n'/x' = 'z'", "projects.'/x' names 'z'"),
        ("home = 'z'\n[coordinators]\na = 'tcp://h:1'", "home names 'z'"),
        ("home = 'a'\nspread = ['a', 'a']\n[coordinators]\na = 'tcp://h:1'", "spread names a coordinator twice"),
        ("home = 'a'\n[coordinators]\na = 'h:1'", "coordinators.a: Value error, endpoint 'h:1' has no transport"),
        ("home = 'a'\n[coordinators]\na = 'tcp://h:1'\n[projects]\n'rel' = 'a'", "relative"),
        ("home = 'a'\nhomes = 'b'\n[coordinators]\na = 'tcp://h:1'", "homes: Extra inputs are not permitted"),
        ("home = 'a'\n[coordinators]", "coordinators: Dictionary should have at least 1 item"),
        ("home = \n", "not TOML"),
    ],
)
def test_a_map_that_does_not_hold_together_is_refused_with_the_fault_named(
    tmp_path: Path, text: str, fault: str
) -> None:
    with pytest.raises(ClusterMapError, match=r"cluster map .*cluster\.toml: ") as caught:
        ClusterMap.load(write(tmp_path, text))
    assert fault in str(caught.value)


def test_a_missing_map_is_named(tmp_path: Path) -> None:
    with pytest.raises(ClusterMapError, match=r"missing\.toml: No such file"):
        ClusterMap.load(tmp_path / "missing.toml")
