"""The grader's client of a sandboxed kernel: what the kernel sends is capped before it
reaches the grader's memory (``CappedKernelClient``, ``RevivingChannel``), and a new
kernel is ready as soon as it says so (``CappedKernelClient.wait_for_ready``)."""

from __future__ import annotations

import contextlib
import time
from queue import Empty
from typing import Callable

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import default
from zmq.utils.monitor import parse_monitor_message

# What the grader takes from a kernel: a message at most MAX_MESSAGE_BYTES (a bigger one
# drops the connection: RevivingChannel), at most QUEUED_MESSAGES of them waiting in a
# channel (a kernel faster than the grader is held back; the iopub channel then loses
# output, which can only cost the student). So a channel holds at most 256 MiB.
MAX_MESSAGE_BYTES = 4 << 20
QUEUED_MESSAGES = 64


class RevivingChannel(AsyncZMQSocketChannel):
    """A channel from a sandboxed kernel that survives a message over MAX_MESSAGE_BYTES.

    ZMQ drops a connection that brings a message over ZMQ_MAXMSGSIZE and never connects
    it again (a protocol error): every later output of the notebook would be lost. This
    channel watches its socket and, when the connection drops, opens a new one to the
    same kernel socket and counts the drop (``take_dropped``), so the grader can say
    that output was cut."""

    def __init__(self, connect: Callable[[], zmq.asyncio.Socket], session) -> None:
        self._connect, self._dropped = connect, 0
        super().__init__(connect(), session)
        self._monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def take_dropped(self) -> int:
        """How many connections dropped since the last call."""
        dropped, self._dropped = self._dropped, 0
        return dropped

    def _revive(self) -> None:
        self._close_socket()
        self._dropped += 1
        self.socket = self._connect()
        self._monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def _close_socket(self) -> None:
        if self.socket is None:
            return
        with contextlib.suppress(zmq.ZMQError):
            self.socket.disable_monitor()
        self._monitor.close(linger=0)
        self.socket.close(linger=0)
        self.socket = None

    async def get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            poller = zmq.asyncio.Poller()
            poller.register(self.socket, zmq.POLLIN)
            poller.register(self._monitor, zmq.POLLIN)
            left = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            ready = dict(await poller.poll(left))
            if self.socket in ready:
                return await self._recv()
            if self._monitor not in ready:
                raise Empty
            event = parse_monitor_message(await self._monitor.recv_multipart())
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self._revive()

    async def msg_ready(self) -> bool:
        return bool(await self.socket.poll(timeout=0))

    def close(self) -> None:
        self._close_socket()

    stop = close


class CappedKernelClient(AsyncKernelClient):
    """The grader's client of a sandboxed kernel: a message bigger than MAX_MESSAGE_BYTES
    drops the connection instead of landing in the grader's memory (the kernel may send
    one huge message; a cell's output is cut at SealedBox.output_kib anyway), and the
    shell and iopub channels connect again after such a drop (RevivingChannel)."""

    @default("context")
    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True
        context = zmq.asyncio.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)
        return context

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """jupyter_client's wait for a new kernel (a kernel_info reply on shell, then a message
        on iopub, which shows iopub is connected), but its last step, reading iopub until it
        has been silent for 0.2 s, ends at the kernel's idle status for the request it
        answered: the last message it sends before the notebook runs. Silence still ends the
        wait if that status never comes. The 0.2 s were a fifth of a submission's grading."""
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                try:
                    first = await self.iopub_channel.get_msg(timeout=0.2)
                except Empty:
                    first = None
                if first is not None:
                    self._handle_kernel_info_reply(reply)
                    break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
        answered = reply["parent_header"].get("msg_id")
        message = first
        while not _idle_after(message, answered):
            try:
                message = await self.iopub_channel.get_msg(timeout=0.2)
            except Empty:
                return

    @property
    def shell_channel(self) -> RevivingChannel:
        if self._shell_channel is None:
            self._shell_channel = RevivingChannel(lambda: self.connect_shell(identity=self.session.bsession),
                                                  self.session)
        return self._shell_channel

    @property
    def iopub_channel(self) -> RevivingChannel:
        if self._iopub_channel is None:
            self._iopub_channel = RevivingChannel(self.connect_iopub, self.session)
        return self._iopub_channel


def _idle_after(message: dict, request_id: str | None) -> bool:
    """Whether an iopub message is the kernel's idle status after request ``request_id``."""
    return (message.get("msg_type") == "status" and message.get("content", {}).get("execution_state") == "idle"
            and message.get("parent_header", {}).get("msg_id") == request_id)
