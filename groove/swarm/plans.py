"""The bundled plan `groove swarm` works: a release of a small shop, as a graph of a few hundred tasks.

Each of `width` components goes through the same stages in order (design, schema, API, tests, ...), and each
stage of a component also waits on the same stage of one other component, so work fans in across the swarm
the way a real release does. Every twentieth task needs a review. Deterministic: the same plan every time.
"""

from __future__ import annotations

from typing import Any

COMPONENTS = (
    "cart", "checkout", "payments", "refunds", "search", "catalog", "accounts", "auth", "orders", "shipping",
    "invoices", "reviews", "wishlist", "coupons", "inventory", "notifications", "admin", "reports", "ratings",
    "returns", "taxes", "currency", "i18n", "analytics", "support",
)  # fmt: skip
STAGES = ("design", "schema", "api", "unit tests", "integration tests", "docs", "review notes", "rollout plan",
          "feature flag", "load test", "migration", "release")  # fmt: skip


def release_plan(width: int = len(COMPONENTS), stages: int = len(STAGES)) -> list[dict[str, Any]]:
    """`width` components by `stages` stages as tasks with their dependencies (300 by default)."""
    tasks = []
    for level, stage in enumerate(STAGES[:stages]):
        for i, component in enumerate(COMPONENTS[:width]):
            deps = [] if level == 0 else sorted({_id(level - 1, i), _id(level - 1, (i * 7 + 3) % width)})
            tasks.append(
                {
                    "id": _id(level, i),
                    "title": f"{component}: {stage}",
                    "depends_on": deps,
                    "priority": stages - level,  # earlier stages first: they unblock the most
                    "needs_review": (level * width + i) % 20 == 19,
                }
            )
    return tasks


def _id(level: int, i: int) -> str:
    return f"{COMPONENTS[i]}.{STAGES[level].replace(' ', '-')}"
