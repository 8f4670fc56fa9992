"""The scripted model's pure parts: which scene and turn a request gets, its fields, and the reply shapes."""

from __future__ import annotations

import json

from benchmarks.scripted_model import (
    MESSAGES_PATH,
    RESPONSES_PATH,
    Scene,
    Script,
    assistant_turns,
    messages_events,
    messages_reply,
    request_text,
    responses_events,
)

SCRIPT = Script(
    scenes=[Scene([r"task `a`"], [{"tool": "mcp__groove__complete_task", "input": {"task_id": "{task}"}}])],
    fields={"task": r"task `([^`]+)`"},
)


def test_a_request_gets_its_scenes_turn_by_the_answers_before_it() -> None:
    first = {"messages": [{"role": "user", "content": "do task `a`"}]}
    later = {"messages": [*first["messages"], {"role": "assistant", "content": []}, {"role": "user", "content": []}]}
    text = request_text(first)
    assert SCRIPT.fill(SCRIPT.scene(text).turn(assistant_turns(MESSAGES_PATH, first)), text) == {
        "tool": "mcp__groove__complete_task", "input": {"task_id": "a"}}  # fmt: skip
    assert SCRIPT.scene(text).turn(assistant_turns(MESSAGES_PATH, later)) == {"text": "Done."}  # past the last
    assert SCRIPT.scene("something else") is SCRIPT.default
    # a Responses conversation: consecutive function calls are one answer
    calls = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]},
                       {"type": "function_call", "name": "a"}, {"type": "function_call", "name": "b"},
                       {"type": "function_call_output", "output": "1"}, {"type": "function_call_output", "output": "2"},
                       {"type": "message", "role": "assistant", "content": []}]}  # fmt: skip
    assert assistant_turns(RESPONSES_PATH, calls) == 2


def test_replies_carry_text_tool_calls_and_the_agents_own_shell() -> None:
    reply = messages_reply({"text": "hi", "shell": "make test"})
    assert reply["stop_reason"] == "tool_use"
    assert [b["type"] for b in reply["content"]] == ["text", "tool_use"]
    assert reply["content"][1]["name"] == "Bash"
    events = messages_events(reply)
    assert (events[0][0], events[-1][0]) == ("message_start", "message_stop")
    streamed = [d["delta"] for k, d in events if k == "content_block_delta"]
    assert json.loads(streamed[1]["partial_json"]) == {"command": "make test"}
    items = [d["item"] for k, d in responses_events({"tool": "mcp__groove__read_nudges", "shell": "ls"})
             if k == "response.output_item.done"]  # fmt: skip
    assert [(i.get("namespace"), i["name"]) for i in items] == [("mcp__groove", "read_nudges"), (None, "exec_command")]
