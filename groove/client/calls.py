"""Each client operation is written once, as steps: a generator that yields the `Call`s it makes and is sent
each reply body back (or has the call's error thrown into it). `GrooveClient` runs the steps on its socket and
returns the result; `AsyncGrooveClient` runs the same steps and is awaited for it. So the two clients cannot
drift apart: one method body, two ways to drive it.

    @operation
    def get(self, learning_id: str) -> Steps[LearningOut]:
        reply = yield Call(C.OP_LEARNING_GET, {"id": learning_id})
        return LearningGetReply.model_validate(reply).learning

`client.get(...)` is then a `LearningOut` on a `GrooveClient` and an awaitable of one on an `AsyncGrooveClient`
(the type checker knows which). This module imports no asyncio: a synchronous agent never pays for it.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, TypeAlias, TypeVar, cast, overload

from groove.client.errors import GrooveError

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """One request an operation makes: the operation's name, its body, and the call options of `call`."""

    op: str
    body: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    attempt_timeout: float | None = None
    request_id: str | None = None


Steps: TypeAlias = Generator[Call, dict[str, Any], T]


class SyncRunner:
    """Drives steps with a blocking `call` (GrooveClient's)."""

    def call(
        self,
        op: str,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def run_steps(self, steps: Steps[T]) -> T:
        """Make each call the steps ask for, in turn, and return what they return."""
        try:
            call = next(steps)
            while True:
                try:
                    reply = self.call(call.op, call.body, call.timeout, call.attempt_timeout, call.request_id)
                except GrooveError as exc:  # the steps may catch it; if not, it comes out of `throw`
                    call = steps.throw(exc)
                else:
                    call = steps.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result


class AsyncRunner:
    """Drives steps with an awaitable `call` (AsyncGrooveClient's)."""

    async def call(
        self,
        op: str,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
        attempt_timeout: float | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def run_steps(self, steps: Steps[T]) -> T:
        """As `SyncRunner.run_steps`, each call awaited."""
        try:
            call = next(steps)
            while True:
                try:
                    reply = await self.call(call.op, call.body, call.timeout, call.attempt_timeout, call.request_id)
                except GrooveError as exc:
                    call = steps.throw(exc)
                else:
                    call = steps.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result


class operation(Generic[P, T]):  # noqa: N801 - used as a decorator, named like one
    """A client method written as steps (see the module's docstring). On the class it is itself (its `steps`
    can be delegated to with `yield from`); on a client, a method that runs them the client's way."""

    def __init__(self, steps: Callable[Concatenate[Any, P], Steps[T]]) -> None:
        self.steps = steps
        functools.update_wrapper(cast(Any, self), steps)  # its name and docstring, for help() on the class

    @overload
    def __get__(self, client: None, owner: type[Any]) -> operation[P, T]: ...

    @overload
    def __get__(self, client: SyncRunner, owner: type[Any]) -> Callable[P, T]: ...

    @overload
    def __get__(self, client: AsyncRunner, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, client: object, owner: type[Any]) -> Any:
        if client is None:
            return self
        steps = self.steps
        if isinstance(client, AsyncRunner):

            async def awaited(*args: P.args, **kwargs: P.kwargs) -> T:
                return await client.run_steps(steps(client, *args, **kwargs))

            return _named(awaited, steps, client)
        assert isinstance(client, SyncRunner)

        def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
            return client.run_steps(steps(client, *args, **kwargs))

        return _named(blocking, steps, client)


def _named(run: Callable[..., Any], steps: Callable[..., Any], client: object) -> Callable[..., Any]:
    """`run` with the steps' name and docstring, and their signature as a bound method's (no `self`) for
    help() and editors."""
    functools.update_wrapper(run, steps)
    run.__wrapped__ = types.MethodType(steps, client)  # type: ignore[attr-defined]
    return run
