"""groove in the OpenAI Agents SDK (`pip install openai-agents`, imported as `agents`): run hooks that give a run
the best learnings for its input and record how it ended, and function tools to search, record and rate
learnings and to work a board.

    async with AsyncGrooveClient(endpoint) as client:
        groove = GrooveRun(client, project="/srv/shop")
        agent = Agent(name="coder", instructions="...", tools=groove.tools() + board_tools(client, "coder-1"))
        async with groove:
            result = await Runner.run(agent, "fix the orders tests", hooks=groove, run_config=groove.run_config())

- `on_agent_start` (the run's first agent): `inject.prepare` with the run's input as the task, once per run (a
  handoff to another agent keeps the run's injection).
- The learnings reach the model through `run_config()`'s `call_model_input_filter`, added to the instructions
  of every model call of the run: the SDK's own per-run way to change what the model sees, so one `Agent` may
  serve many runs at once (changing `agent.instructions` would not be per run).
- `on_agent_end` (the final output) closes the injection (`outcome.record`): the learnings the model did not
  rate with `rate_learning` count as ignored; `succeeded(output)`, when given, says whether the task succeeded.
  A run that raises never reaches `on_agent_end`: leaving `async with groove` closes it as failed.

One `GrooveRun` serves one run. A tool call groove refuses (an unknown id, a task not held) is answered with
groove's error, so the model can correct it; nothing is changed by it.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Annotated, Any

# The SDK's names are taken from the modules that define them.
from agents.lifecycle import RunHooks
from agents.run_config import CallModelData, ModelInputData, RunConfig
from agents.run_context import RunContextWrapper
from agents.tool import FunctionTool, default_tool_error_function, function_tool
from pydantic import Field

from groove.client.asyncclient import AsyncGrooveClient
from groove.client.errors import GrooveError
from groove.integrations.hook import learnings_block
from groove.protocol import constants as C
from groove.protocol.loop import InjectPrepareReply
from groove.protocol.models import OutcomeRecordReply

SESSION_PREFIX = "openai-agents-"


class GrooveRunError(Exception):
    """A `GrooveRun` used for a second run."""


def _tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    """What the model is told of a tool that raised: groove's own errors say what was wrong with the call (an
    unknown id, a task not held); anything else gets the SDK's message, which shows nothing of the error."""
    if isinstance(error, GrooveError):
        return f"groove refused the call: {error}"
    return default_tool_error_function(context, error)


def _tools(*functions: Callable[..., Any]) -> list[FunctionTool]:
    return [function_tool(f, failure_error_function=_tool_error) for f in functions]


def task_of(items: list[Any]) -> str | None:
    """The run's input as a task: the text of its user messages (a plain string input is one of them)."""
    texts: list[str] = []
    for item in items:
        if not isinstance(item, dict) or item.get("role", "user") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
    task = "\n".join(t.strip() for t in texts if t.strip())
    return task[: C.MAX_QUERY_CHARS] or None


class GrooveRun(RunHooks[Any]):
    """groove for one `Runner.run`: pass it as `hooks=`, its `run_config()` as `run_config=`, its `tools()` to
    the agent. `project`/`enterprise`: the context whose learnings are offered; `budget`: how many at most."""

    def __init__(
        self,
        client: AsyncGrooveClient,
        *,
        project: str | None = None,
        enterprise: str | None = None,
        budget: int | None = None,
        session_id: str | None = None,
        succeeded: Callable[[Any], bool | None] | None = None,
    ) -> None:
        self.client = client
        self.project, self.enterprise, self.budget = project, enterprise, budget
        self.session_id = session_id or f"{SESSION_PREFIX}{uuid.uuid4()}"
        self.succeeded = succeeded
        self.injection: InjectPrepareReply | None = None
        self.outcome: OutcomeRecordReply | None = None
        self._closed = False

    # --- the run's hooks ------------------------------------------------------------------------------

    async def on_agent_start(self, context: RunContextWrapper[Any], agent: Any) -> None:
        """The run's first agent: ask groove for the learnings for the run's input."""
        if self._closed:
            raise GrooveRunError("this GrooveRun served a run already: make one per run")
        if self.injection is not None:
            return  # a handoff: the run keeps what it was given
        task = task_of(list(context.turn_input))
        self.injection = await self.client.inject(
            self.session_id, task=task, project=self.project, enterprise=self.enterprise, budget=self.budget
        )

    async def on_agent_end(self, context: RunContextWrapper[Any], agent: Any, output: Any) -> None:
        """The final output: close the injection, with whether the task succeeded if `succeeded` says."""
        await self.close(success=None if self.succeeded is None else self.succeeded(output))

    def model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """`call_model_input_filter`: the run's learnings after the agent's instructions."""
        given = self.instructions()
        if given is None:
            return data.model_data
        base = data.model_data.instructions
        return dataclasses.replace(data.model_data, instructions=f"{base}\n\n{given}" if base else given)

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """`base` (or the default RunConfig) with this run's input filter; a filter already there is kept and
        runs first."""
        config = base or RunConfig()
        earlier = config.call_model_input_filter
        if earlier is None:
            return dataclasses.replace(config, call_model_input_filter=self.model_input)

        async def chained(data: CallModelData[Any]) -> ModelInputData:
            first = earlier(data)
            filtered = await first if not isinstance(first, ModelInputData) else first
            return self.model_input(dataclasses.replace(data, model_data=filtered))

        return dataclasses.replace(config, call_model_input_filter=chained)

    def instructions(self) -> str | None:
        """What the model is told of its learnings (None before the injection, or when it holds none)."""
        if self.injection is None or not self.injection.learnings:
            return None
        learnings = [item.model_dump() for item in self.injection.learnings]
        rating = (
            "When you know how one of these turned out, call `rate_learning` with its id: `helpful`, `ignored`, or "
            "`contradicted` (it was wrong here). Each counts once. Record what the next agent should know with "
            "`record_learning`."
        )
        return "\n".join([*learnings_block(learnings), rating])

    async def close(self, success: bool | None = None) -> OutcomeRecordReply | None:
        """Close the run's injection (once; later calls return the first answer): unrated learnings count as
        ignored, `success` feeds the coordinator's adaptive parameters. None when no run started."""
        if self._closed or self.injection is None:
            return self.outcome
        self._closed = True
        self.outcome = await self.client.close_session(
            injection_id=self.injection.injection_id, success=success, session_id=self.session_id
        )
        return self.outcome

    async def __aenter__(self) -> GrooveRun:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """A run that raised is closed as failed; one that ended is closed already (by `on_agent_end`)."""
        await self.close(success=False if kind is not None else None)

    # --- the tools ------------------------------------------------------------------------------------

    def tools(self) -> list[FunctionTool]:
        """search_learnings, record_learning (in this run's project, else global) and rate_learning (for the
        learnings this run was given)."""
        client = self.client

        async def search_learnings(
            query: Annotated[str, Field(min_length=1)], limit: Annotated[int, Field(ge=1, le=20)] = 5
        ) -> list[dict[str, Any]]:
            """Find what other agents learned that bears on a task, best first: each has its id, the advice
            (insight) and its confidence (0-1, from how it fared before).

            Args:
                query: What you are about to do, or the problem you face.
                limit: How many at most.
            """
            hits = await client.search(query, limit=limit, project=self.project)
            return [{"id": h.learning.id, "insight": h.learning.insight, "description": h.learning.description,
                     "confidence": round(h.learning.confidence, 3)} for h in hits]  # fmt: skip

        async def record_learning(
            description: Annotated[str, Field(min_length=1)],
            insight: Annotated[str, Field(min_length=1)],
            category: C.Category,
        ) -> dict[str, Any]:
            """Store something worth remembering for other agents (a fix that worked, a trap, a convention).
            The same content again reinforces the stored learning instead of duplicating it.

            Args:
                description: What happened: the situation and what you found.
                insight: The advice for the next agent, as an instruction.
                category: What kind of learning it is.
            """
            scope = f"{C.SCOPE_PROJECT_PREFIX}{self.project}" if self.project else C.SCOPE_GLOBAL
            learning = {"scope": scope, "category": category, "description": description, "insight": insight}
            reply = await client.put_learnings([learning])
            return {"id": reply.ids[0], "created": reply.created[0]}

        async def rate_learning(learning_id: str, outcome: C.OutcomeKind) -> dict[str, Any]:
            """Say how a learning you were given turned out. This is what moves its confidence for every agent
            after you; each learning counts once per run.

            Args:
                learning_id: The learning's id, as given to you.
                outcome: helpful, ignored, or contradicted (it was wrong here).
            """
            reply = await client.close_session([(learning_id, outcome)], session_id=self.session_id)
            return {"applied": reply.applied, "rated_before": reply.rated_before}

        return _tools(search_learnings, record_learning, rate_learning)


def board_tools(client: AsyncGrooveClient, agent_id: str, *, role: str | None = None) -> list[FunctionTool]:
    """Tools that let an SDK agent work a groove board as `agent_id`: claim_task, complete_task, fail_task,
    read_nudges (acknowledging them) and add_note."""

    async def claim_task(memory_id: str) -> dict[str, Any] | None:
        """Take the highest-priority ready task of a working memory (null when none is). Finish it with
        complete_task or fail_task within ten minutes.

        Args:
            memory_id: The working memory (the plan) to take a task from.
        """
        task = await client.claim_task(memory_id, agent_id, C.DEFAULT_LEASE_MS, role)
        return None if task is None else {"id": task.id, "title": task.title, "description": task.description}

    async def complete_task(task_id: str, summary: Annotated[str, Field(min_length=1)]) -> dict[str, Any]:
        """Mark a task you hold done (or in review, if it needs one).

        Args:
            task_id: The task's id, from claim_task.
            summary: What was done.
        """
        done = await client.complete_task(task_id, agent_id, summary)
        return {"status": done.status}

    async def fail_task(task_id: str, error: str, retry: bool = True) -> dict[str, Any]:
        """Give up a task you hold: it goes back to the plan for another attempt unless retry is false.

        Args:
            task_id: The task's id, from claim_task.
            error: Why it failed.
            retry: Whether another attempt may be made.
        """
        return (await client.fail_task(task_id, agent_id, error, retry)).model_dump()

    async def read_nudges() -> list[dict[str, Any]]:
        """Messages for you from the swarm's lead or other agents, most urgent first (each given once)."""
        nudges = await client.poll_nudges(agent_id, role)
        if nudges:
            await client.ack_nudges(agent_id, [n.id for n in nudges])
        return [{"from": n.created_by, "priority": n.priority, "message": n.message} for n in nudges]

    async def add_note(memory_id: str, content: Annotated[str, Field(min_length=1)], task_id: str | None = None) -> str:
        """Share a discovery with the agents working a memory; they find it by meaning. Returns its id.

        Args:
            memory_id: The working memory.
            content: What the others should know.
            task_id: The task it concerns, if any.
        """
        return await client.note(memory_id, content, "discovery", task_id, agent_id)

    return _tools(claim_task, complete_task, fail_task, read_nudges, add_note)
