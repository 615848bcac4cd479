"""The reference coordinator behind a Kafka socket, in a background thread (`--target reference`).

A small stand-in for `groupspec serve` so the fuzzer has a negative control in-process: it speaks
ApiVersions, FindCoordinator and the group APIs over real loopback sockets; the reference's
virtual clock follows real time (advanced before every request and by a 5 ms ticker), so its
timers fire in real time. `bugs` switches on seeded bugs from `reference/bugs.py`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Optional

from model import messages as m
from model.coordinator_api import CoordinatorConfig
from model.vocabulary import ApiKey
from reference.coordinator import ReferenceCoordinator
from wire import apis, codec, convert
from wire.errors import WireError
from wire.schema import Struct


class ReferenceBroker:
    """`with ReferenceBroker(config, bugs) as b:` -> a broker on 127.0.0.1:`b.port`."""

    def __init__(self, config: CoordinatorConfig = CoordinatorConfig(),
                 bugs: frozenset[str] = frozenset()) -> None:
        self.ref = ReferenceCoordinator(config, bugs=bugs)
        self.port = 0
        self.errors: list[str] = []
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()
        self._stop: Optional[asyncio.Event] = None
        self._t0 = time.monotonic()

    def _tick(self) -> None:
        now = int((time.monotonic() - self._t0) * 1000)
        if now > self.ref.now_ms():
            self.ref.advance(now - self.ref.now_ms())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        while not self._stop.is_set():
            self._tick()
            try:
                await asyncio.wait_for(self._stop.wait(), 0.005)
            except asyncio.TimeoutError:
                pass
        server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = codec.FrameBuffer(max_frame_bytes=1 << 20)
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    return
                for data in frames.feed(chunk):
                    self._request(data, writer)
        except OSError:
            return
        except Exception as e:  # a defect of this stand-in: say so, drop the connection
            import traceback
            traceback.print_exc()
            self.errors.append(f"{type(e).__name__}: {e}")
            return
        finally:
            writer.close()

    def _request(self, data: bytes, writer: asyncio.StreamWriter) -> None:
        header, body = codec.decode_request(data)
        api = codec.api_key_of(header.api_key)
        assert api is not None
        version, cid = header.api_version, header.correlation_id

        def reply(out: Struct) -> None:
            if not writer.is_closing():
                writer.write(codec.frame(codec.encode_response(api, version, cid, out)))

        if api is ApiKey.ApiVersions:
            reply({"error_code": 0, "api_keys": [
                {"api_key": k.value, "min_version": v.lo, "max_version": v.hi}
                for k, v in apis.SUPPORTED_VERSIONS.items()]})
            return
        if api is ApiKey.FindCoordinator:
            if version >= 4:
                reply({"coordinators": [{"key": k, "node_id": 0, "host": "127.0.0.1",
                                         "port": self.port, "error_code": 0}
                                        for k in body["coordinator_keys"]]})
            else:
                reply({"error_code": 0, "node_id": 0, "host": "127.0.0.1", "port": self.port})
            return
        record = convert.request_record(api, version, body)
        if isinstance(record, m.JoinGroupRequest) and header.client_id is not None:
            import dataclasses
            record = dataclasses.replace(record, client_id=header.client_id)
        self._tick()

        def respond(response: m.Response) -> None:
            reply(_body(response, version, record))

        self.ref.handle(record, respond)

    def __enter__(self) -> "ReferenceBroker":
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self._serve())
            loop.close()

        self._thread = threading.Thread(target=run, daemon=True, name="reference-broker")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the in-process reference broker did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(5)


def _body(response: m.Response, version: int, request: m.Request) -> Struct:
    """The wire body, with the two version folds `convert.response_body` leaves to a broker:
    LeaveGroup below v3 carries the member's error at top level (Kafka's LeaveGroupResponse
    getError), OffsetFetch v8+ nests the answer under its group."""
    if isinstance(response, m.LeaveGroupResponse) and version < 3:
        error = response.error
        if error.code == 0:
            error = next((x.error for x in response.members if x.error.code != 0), error)
        return {"error_code": error.code}
    if isinstance(response, m.OffsetFetchResponse) and version >= 8:
        inner = convert.response_body(response, 7)[1]
        assert isinstance(request, m.OffsetFetchRequest)
        return {"groups": [{"group_id": request.group_id, "topics": [
            {"name": t["name"], "partitions": [dict(p) for p in t["partitions"]]}
            for t in inner["topics"]], "error_code": response.error.code}]}
    return convert.response_body(response, version)[1]
