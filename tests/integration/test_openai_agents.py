"""`groove.integrations.openai_agents` with the real OpenAI Agents SDK (`openai-agents`, installed by `make`)
against the scripted Responses-API model on loopback and a real coordinator: a run is given its project's
learning, rates it, and its counts move exactly once; a run that raises is closed as failed; the learning tools
and the board tools act on the coordinator; bad input reaches the model as an error and changes nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner
from agents.exceptions import AgentsException
from agents.models.openai_responses import OpenAIResponsesModel
from agents.run_config import CallModelData, ModelInputData, RunConfig
from openai import APIStatusError, AsyncOpenAI

from benchmarks.scripted_model import MODEL, Scene, Script, ScriptedModel
from groove.client import AsyncGrooveClient, GrooveClient
from groove.integrations.openai_agents import GrooveRun, GrooveRunError, board_tools, task_of
from tests.helpers import RunningCoordinator, run_readme_example

PROJECT = "/srv/shop"
FIELDS = {
    "learning_id": r"\(id `([0-9a-f-]{36})`",
    "task_id": r"""["']id["']: ["']([^"']+)["']""",
}
OFFLINE = RunConfig(tracing_disabled=True)  # the SDK would send its traces to OpenAI


Body = Callable[[AsyncGrooveClient, Callable[[list[Any]], Agent[Any]]], Awaitable[Any]]


def run(endpoint: str, model: ScriptedModel, body: Body) -> Any:
    """`body` in a fresh event loop, given an async client of the coordinator and a maker of SDK agents whose
    model is the scripted server, speaking the Responses API."""

    async def main() -> Any:
        openai = AsyncOpenAI(base_url=f"{model.url}/v1", api_key="offline", max_retries=0)

        def agent(tools: list[Any]) -> Agent[Any]:
            return Agent(name="coder", instructions="You fix the shop's tests.", tools=tools,
                         model=OpenAIResponsesModel(model=MODEL, openai_client=openai))  # fmt: skip

        async with AsyncGrooveClient(endpoint) as client:
            try:
                return await body(client, agent)
            finally:
                await openai.close()

    return asyncio.run(main())


def outputs(model: ScriptedModel) -> list[str]:
    """What the tools answered, in the order the model was shown them."""
    last = model.requests[-1].body["input"]
    return [
        str(item["output"]) for item in last if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def test_a_run_is_given_its_learning_rates_it_and_it_is_counted_once(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    lid = client.learn(f"project:{PROJECT}", "solution", "orders tests share one database",
                       "Give each orders test its own schema")  # fmt: skip
    client.learn("project:/srv/other", "solution", "other project", "Never shown to the shop")
    rate = {"tool": "rate_learning", "input": {"learning_id": "{learning_id}", "outcome": "helpful"}}
    script = Script([Scene(["fix the orders tests"], [rate, {"text": "fixed"}])], fields=FIELDS)

    async def body(aclient: AsyncGrooveClient, agent: Callable[[list[Any]], Agent[Any]]) -> tuple[Any, GrooveRun]:
        async with GrooveRun(aclient, project=PROJECT, succeeded=lambda output: output == "fixed") as groove:
            done = await Runner.run(agent(groove.tools()), "fix the orders tests", hooks=groove,
                                    run_config=groove.run_config(OFFLINE))  # fmt: skip
        return done, groove

    with ScriptedModel(script) as model:
        done, groove = run(coordinator.endpoint, model, body)
    assert done.final_output == "fixed"
    instructions = model.requests[0].body["instructions"]
    assert instructions.startswith("You fix the shop's tests.")
    assert "Give each orders test its own schema" in instructions
    assert lid in instructions
    assert "Never shown to the shop" not in instructions
    assert json.loads(outputs(model)[0].replace("'", '"')) == {"applied": 1, "rated_before": 0}
    assert groove.injection is not None
    assert groove.outcome is not None
    assert (groove.outcome.applied, groove.outcome.ignored) == (0, 0)  # rated already: not counted again
    usage = client.get(lid).usage
    assert (usage.times_injected, usage.times_helpful, usage.times_ignored) == (1, 1, 0)
    given = client.get_injection(groove.injection.injection_id)
    assert given.closed_at is not None
    assert given.session_id == groove.session_id
    assert client.stats().op_counts.get("inject.prepare") == 1


def brief(data: CallModelData[Any]) -> ModelInputData:
    """A user's own input filter: groove's runs after it."""
    return dataclasses.replace(data.model_data, instructions=f"{data.model_data.instructions} Be brief.")


def test_a_handoff_keeps_the_runs_injection(coordinator: RunningCoordinator, client: GrooveClient) -> None:
    client.learn(f"project:{PROJECT}", "solution", "to ship a change it needs a changelog line", "Add a changelog line")
    script = Script([Scene(["ship the change"], [{"tool": "transfer_to_reviewer", "input": {}}, {"text": "shipped"}])])

    async def body(aclient: AsyncGrooveClient, agent: Callable[[list[Any]], Agent[Any]]) -> Any:
        async with GrooveRun(aclient, project=PROJECT) as groove:
            coder = agent(groove.tools())
            coder.handoffs = [coder.clone(name="reviewer", instructions="You review changes.")]
            mine = dataclasses.replace(OFFLINE, call_model_input_filter=brief)  # a filter of the user's own
            return await Runner.run(coder, "ship the change", hooks=groove, run_config=groove.run_config(mine))

    with ScriptedModel(script) as model:
        done = run(coordinator.endpoint, model, body)
    assert done.final_output == "shipped"
    assert done.last_agent.name == "reviewer"
    first, second = (r.body["instructions"] for r in model.requests)
    assert first.startswith("You fix the shop's tests. Be brief.\n\n## Learnings from groove")
    assert second.startswith("You review changes. Be brief.\n\n## Learnings from groove")
    assert "Add a changelog line" in first
    assert "Add a changelog line" in second
    assert client.stats().op_counts.get("inject.prepare") == 1


def test_a_run_that_raises_is_closed_as_failed_and_a_run_serves_one_run(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    lid = client.learn(f"project:{PROJECT}", "solution", "payments need stripe-mock", "Start stripe-mock first")
    script = Script(default=Scene([], [{"error": 400}]))

    async def body(aclient: AsyncGrooveClient, agent: Callable[[list[Any]], Agent[Any]]) -> GrooveRun:
        groove = GrooveRun(aclient, project=PROJECT)
        with pytest.raises((AgentsException, APIStatusError)):
            async with groove:
                await Runner.run(agent(groove.tools()), "fix the payments page", hooks=groove,
                                 run_config=groove.run_config(OFFLINE))  # fmt: skip
        with pytest.raises(GrooveRunError):  # made for one run: a second one is refused before it asks groove
            await Runner.run(agent([]), "again", hooks=groove, run_config=groove.run_config(OFFLINE))
        return groove

    with ScriptedModel(script) as model:
        groove = run(coordinator.endpoint, model, body)
    assert groove.outcome is not None
    assert groove.outcome.ignored == 1
    usage = client.get(lid).usage
    assert (usage.times_injected, usage.times_helpful, usage.times_ignored) == (1, 0, 1)
    assert client.stats().op_counts.get("inject.prepare") == 1


def test_the_learning_tools_search_and_record_in_the_runs_project(
    coordinator: RunningCoordinator, client: GrooveClient
) -> None:
    record = {"description": "The cart tests need the fixtures loaded", "insight": "Run make fixtures first",
              "category": "tool_usage"}  # fmt: skip
    recording = {"tool": "record_learning", "input": record}
    search = {"tool": "search_learnings", "input": {"query": "cart fixtures"}}
    bad = {"tool": "rate_learning", "input": {"learning_id": "not-an-id", "outcome": "helpful"}}
    script = Script([Scene(["cart"], [recording, search, bad, {"text": "noted"}])])

    async def body(aclient: AsyncGrooveClient, agent: Callable[[list[Any]], Agent[Any]]) -> GrooveRun:
        async with GrooveRun(aclient, project=PROJECT) as groove:
            await Runner.run(agent(groove.tools()), "fix the cart tests", hooks=groove,
                             run_config=groove.run_config(OFFLINE))  # fmt: skip
        return groove

    with ScriptedModel(script) as model:
        groove = run(coordinator.endpoint, model, body)
    stored = client.list_learnings(scope_prefix=f"project:{PROJECT}").learnings
    assert [(g.insight, g.category) for g in stored] == [("Run make fixtures first", "tool_usage")]
    made, found, refused = outputs(model)
    assert stored[0].id in made
    assert stored[0].id in found
    assert refused.startswith("groove refused the call: bad_request")
    assert "not-an-id" in refused
    assert groove.injection is not None
    assert groove.injection.learnings == []
    assert groove.outcome is not None
    assert (groove.outcome.applied, groove.outcome.ignored) == (0, 0)


def test_an_sdk_agent_claims_and_completes_a_board_task(coordinator: RunningCoordinator, client: GrooveClient) -> None:
    memory = client.create_memory(PROJECT, "release", "ship the cart")
    first = client.add_plan(memory, [{"id": "cart", "title": "fix the cart", "description": "the totals are off"}])[0]
    client.send_nudge("worker-1", memory, "the totals use the old tax table", created_by="lead")
    note = {"memory_id": memory, "content": "tax table moved", "task_id": "{task_id}"}
    turns: list[dict[str, Any]] = [
        {"tools": [{"name": "claim_task", "input": {"memory_id": memory}}, {"name": "read_nudges", "input": {}}]},
        {"tools": [{"name": "add_note", "input": note},
                   {"name": "complete_task", "input": {"task_id": "{task_id}", "summary": "totals fixed"}}]},
        {"text": "done"},
    ]  # fmt: skip
    script = Script([Scene(["work the board"], turns)], fields=FIELDS)

    async def body(aclient: AsyncGrooveClient, agent: Callable[[list[Any]], Agent[Any]]) -> Any:
        return await Runner.run(agent(board_tools(aclient, "worker-1")), "work the board", run_config=OFFLINE)

    with ScriptedModel(script) as model:
        done = run(coordinator.endpoint, model, body)
    assert done.final_output == "done"
    task = client.task(first)
    assert (task.status, task.assigned_to) == ("completed", "worker-1")
    claimed, nudged, noted, completed = outputs(model)
    assert noted in [n.id for n in client.notes(memory)]
    assert first in claimed
    assert "the totals use the old tax table" in nudged
    assert client.poll_nudges("worker-1") == []  # acknowledged: never given again
    assert [n.content for n in client.notes(memory)] == ["tax table moved"]
    assert "completed" in completed


def test_the_task_is_the_text_of_the_runs_user_messages() -> None:
    given = [
        {"role": "user", "content": "fix the orders tests"},
        {"role": "assistant", "content": "on it"},
        {"type": "function_call_output", "output": "x"},
        {"role": "user", "content": [{"type": "input_text", "text": "  and the cart  "}, {"type": "input_image"}]},
    ]
    assert task_of(given) == "fix the orders tests\nand the cart"
    assert task_of([{"role": "user", "content": "   "}]) is None
    assert task_of([{"role": "user", "content": "x" * 5000}]) == "x" * 2000


def test_the_docs_example_runs_as_written(
    coordinator: RunningCoordinator, client: GrooveClient, tmp_path: Path
) -> None:
    rate = {"tool": "rate_learning", "input": {"learning_id": "{learning_id}", "outcome": "helpful"}}
    script = Script([Scene(["fix the orders tests"], [rate, {"text": "fixed the orders tests"}])], fields=FIELDS)
    with ScriptedModel(script) as model:
        offline = {"OPENAI_BASE_URL": f"{model.url}/v1", "OPENAI_API_KEY": "offline",
                   "OPENAI_AGENTS_DISABLE_TRACING": "1"}  # fmt: skip
        ran = run_readme_example("openai-agents", coordinator.endpoint, tmp_path, offline)
    assert ran.stdout.splitlines() == ["fixed the orders tests", "given 1, left unrated 0"]
    (learning,) = client.list_learnings(scope_prefix="project:/srv/shop").learnings
    usage = learning.usage
    assert (usage.times_injected, usage.times_helpful, usage.times_ignored) == (1, 1, 0)
