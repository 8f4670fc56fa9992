"""An orchestrator in a few lines: plan a working memory from a plan file, start workers on it (one of them
for the QA role), approve what waits for a review, and wait until every task is done.

    python examples/orchestrator.py --endpoint tcp://127.0.0.1:5555 --plan examples/plan.yaml

The workers here are synthetic: they claim, work and complete tasks without a coding agent. Give
`Orchestrator.run` `agent="claude"` and `repo=...` for real ones (see the README's swarm section).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import yaml

from groove.swarm.orchestrator import Orchestrator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5555", help="the coordinator")
    parser.add_argument("--plan", type=Path, default=Path(__file__).with_name("plan.yaml"), help="a plan file")
    parser.add_argument("--workers", type=int, default=3, help="workers without a role")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the plan")
    args = parser.parse_args()
    plan = yaml.safe_load(args.plan.read_text())
    with Orchestrator(args.endpoint) as orchestrator:
        memory = orchestrator.plan(
            "/srv/example/shop", plan["name"], plan["goal"], plan["tasks"], constraints=plan["constraints"]
        )
        fleet = orchestrator.run(memory, args.workers, duration=args.timeout)
        fleet.spawn("qa-0", memory=memory, role="qa", duration=args.timeout)  # takes `role: qa` tasks too
        client = orchestrator.client
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            for task in client.tasks(memory, status="review"):
                client.review_task(task.id, "example-lead", "approved")
                print(f"approved {task.id}")
            counts = client.memory(memory).tasks
            if counts and set(counts) == {"completed"}:
                break
            time.sleep(0.2)
        fleet.stop()
        done = {t.id: t.status for t in client.tasks(memory)}
    print(", ".join(f"{task} {status}" for task, status in sorted(done.items())))
    return 0 if set(done.values()) == {"completed"} else 1


if __name__ == "__main__":
    sys.exit(main())
