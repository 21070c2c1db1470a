"""Running a traced call of each function kind: sync, ``async def``, generator, async generator.

The user's function is called exactly as it would be undecorated: same arguments, same return
value or yielded items, same exception (re-raised as is). The span's context is current only
while the user's code runs; for generators it is attached on every resume and detached before
every yield, so the consumer of a stream never sees it as its own current span.

Generators and async generators are traced from their first resume to their end (exhaustion,
``close()`` or an exception), as children of the context current when the function was *called*:
a stream returned by a pipeline and consumed later still lands in the pipeline's trace. A
generator that is never iterated records no span.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from opentelemetry import context as otel_context

from ragtrace import _config, _health
from ragtrace._kinds import Active, Spec
from ragtrace.suppression import SUPPRESS_KEY, is_suppressed

__all__ = ["SUPPRESS_KEY", "wrap_async", "wrap_async_generator", "wrap_generator", "wrap_sync"]


def _start(
    spec: Spec, args: Any, kwargs: Any, settings: _config.Settings, parent: Any = None
) -> Active | None:
    try:
        return spec.start(args, kwargs, settings, parent)
    except Exception as exc:  # noqa: BLE001
        _health.report("starting the span", exc)
        return None


def _safe(step: Callable[..., None], *args: Any) -> None:
    try:
        step(*args)
    except Exception as exc:  # noqa: BLE001
        _health.report("ending the span", exc)


def wrap_sync(fn: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        settings = _config.current()
        if not settings.enabled or is_suppressed():
            return fn(*args, **kwargs)
        active = _start(spec, args, kwargs, settings)
        if active is None:
            return fn(*args, **kwargs)
        token = otel_context.attach(active.ctx)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)
            _safe(active.fail, exc)
            raise
        otel_context.detach(token)
        _safe(active.succeed, result)
        return result

    return traced


def wrap_async(fn: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        settings = _config.current()
        if not settings.enabled or is_suppressed():
            return await fn(*args, **kwargs)
        active = _start(spec, args, kwargs, settings)
        if active is None:
            return await fn(*args, **kwargs)
        token = otel_context.attach(active.ctx)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:
            otel_context.detach(token)
            _safe(active.fail, exc)
            raise
        otel_context.detach(token)
        _safe(active.succeed, result)
        return result

    return traced


def _wrap_stream(
    fn: Callable[..., Any], spec: Spec, drive: Callable[..., Any]
) -> Callable[..., Any]:
    """A generator or async generator function: the call makes the user's stream, which
    ``drive`` (:func:`_drive`, :func:`_adrive`) traces as it is consumed."""

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        settings = _config.current()
        if not settings.enabled or is_suppressed():
            return fn(*args, **kwargs)
        inner = fn(*args, **kwargs)  # argument errors surface here, as without the decorator
        return drive(inner, spec, args, kwargs, settings, otel_context.get_current())

    return traced


def wrap_generator(fn: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    return _wrap_stream(fn, spec, _drive)


def _drive(
    inner: Generator[Any, Any, Any], spec: Spec, args: Any, kwargs: Any, settings: Any, parent: Any
) -> Generator[Any, Any, Any]:
    active = _start(spec, args, kwargs, settings, parent)
    if active is None:
        return (yield from inner)
    ctx = active.ctx
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        token = otel_context.attach(ctx)
        try:
            item = inner.send(sent) if thrown is None else inner.throw(thrown)
        except StopIteration as stop:
            otel_context.detach(token)
            _safe(active.finish_stream)
            return stop.value
        except BaseException as exc:
            otel_context.detach(token)
            _safe(active.fail, exc)
            raise
        otel_context.detach(token)
        thrown = None
        _safe(active.observe, item)
        try:
            sent = yield item
        except GeneratorExit:  # the consumer closed the stream early (or it was collected)
            token = otel_context.attach(ctx)
            try:
                inner.close()
            except BaseException as exc:
                otel_context.detach(token)
                _safe(active.fail, exc)
                raise
            otel_context.detach(token)
            _safe(active.finish_stream)
            raise
        except BaseException as exc:  # noqa: BLE001 - thrown in by the consumer: pass it on to the user's code
            thrown, sent = exc, None


def wrap_async_generator(fn: Callable[..., Any], spec: Spec) -> Callable[..., Any]:
    return _wrap_stream(fn, spec, _adrive)


async def _adrive(
    inner: AsyncGenerator[Any, Any], spec: Spec, args: Any, kwargs: Any, settings: Any, parent: Any
) -> AsyncGenerator[Any, Any]:
    active = _start(spec, args, kwargs, settings, parent)
    if active is None:
        async for item in inner:
            yield item
        return
    ctx = active.ctx
    sent: Any = None
    thrown: BaseException | None = None
    while True:
        token = otel_context.attach(ctx)
        try:
            item = await (inner.asend(sent) if thrown is None else inner.athrow(thrown))
        except StopAsyncIteration:
            otel_context.detach(token)
            _safe(active.finish_stream)
            return
        except BaseException as exc:
            otel_context.detach(token)
            _safe(active.fail, exc)
            raise
        otel_context.detach(token)
        thrown = None
        _safe(active.observe, item)
        try:
            sent = yield item
        except GeneratorExit:
            token = otel_context.attach(ctx)
            try:
                await inner.aclose()
            except BaseException as exc:
                otel_context.detach(token)
                _safe(active.fail, exc)
                raise
            otel_context.detach(token)
            _safe(active.finish_stream)
            raise
        except BaseException as exc:  # noqa: BLE001
            thrown, sent = exc, None
