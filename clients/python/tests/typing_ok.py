"""Type-checked (never run) by python_client.py with `mypy --strict` against the installed
package: the README's code and docs/clients.md's, with the types a caller relies on."""

import asyncio
from typing import List, Literal, Optional

import dshpty


def readme() -> None:
    with dshpty.Service() as service:
        session = service.spawn(type="shell", name="main", cwd="/tmp")
        send = service.start_send(session.session_id, text="ls -la")
        result = send.result()
        print(result.viewport, result.wait_reason, result.exit_code)


def blocking(service: dshpty.Service) -> List[str]:
    session = service.spawn(type="shell", terminal="xterm", sandbox="read-only", network=False)
    send = service.start_send(session.session_id, text="seq 3", idle_ms=3, timeout_ms=1000)
    chunks: List[str] = [chunk for chunk in send]
    result: dshpty.SendResult = send.result()
    reason: Literal["stdin_read", "inferred_idle", "timeout", "session_exit", "matched"] = result.wait_reason
    kind: Literal["running", "exited", "lost", "reconnecting"] = result.session_status.kind
    code: Optional[int] = result.exit_code
    print(reason, kind, code, service.send(session.session_id, "true", idle_ms=3).viewport)
    try:
        service.signal(session.session_id, "SIGINT")
    except dshpty.DshptyError as error:
        if error.code == "SEND_ACTIVE" and error.result is not None:
            chunks.append(error.result.viewport)
    service.close(force=True)
    return chunks


def jobs(service: dshpty.Service) -> str:
    session = service.spawn()
    job = service.start_send(session.session_id, text="npm run dev", background=True, until={"port": 5173},
                             timeout_ms=60000)
    started: dshpty.JobStarted = job.started()
    port: Optional[int] = started.match.get("port") if started.match else None
    out: dshpty.JobOutput = job.output(offset=0, wait_ms=1000)
    text = "".join(chunk for chunk in job) + out.delta
    dropped: int = job.dropped_bytes + out.dropped_bytes
    stop: dshpty.StopResult = job.stop()
    signal: Literal["SIGINT", "SIGTERM", "SIGKILL"] = stop.signals[0]
    result: dshpty.SendResult = job.result()
    return f"{port}{text}{dropped}{signal}{result.exit_code}"


async def async_jobs(service: dshpty.AsyncService, session_id: str) -> str:
    job = await service.start_send(session_id, text="make", background=True, until={"output": "^ready$"})
    started: dshpty.JobStarted = await job.started()
    out: dshpty.JobOutput = await job.output(offset=0, wait_ms=1000)
    text = "".join([chunk async for chunk in job])
    stop: dshpty.StopResult = await job.stop()
    result: dshpty.SendResult = await job
    return f"{started.wait_reason}{out.next_offset}{text}{stop.stopped}{result.viewport}"


async def asynchronous() -> str:
    async with dshpty.AsyncService(request_timeout=5.0) as service:
        session = await service.spawn()
        send = await service.start_send(session.session_id, text="ls")
        text = "".join([chunk async for chunk in send])
        result: dshpty.SendResult = await send
        again: dshpty.SendResult = await send.result()
        await service.close(force=True)
        return text + result.viewport + again.viewport


asyncio.run(asynchronous())
