"""Hosts on one machine: servers in network namespaces of the test's own, behind links that go silent.

On loopback a stopped server answers at once with a refused connection. Across real hosts a link
goes silent instead (a failover, a dropped route, a NAT that forgot the connection): no FIN, no
RST, nothing, and a client waits for as long as its own timeouts say. ``Host`` makes such a host
here: a network namespace joined to this machine by a veth pair, this machine's end at
``gateway`` and the host's at ``address``. A server started with ``within`` as its command
prefix listens inside it, at ``address``.

``Host.silence()`` adds, inside the namespace, a blackhole route to this machine's end
(``ip route add blackhole <gateway>/32``): packets still arrive, and every reply (SYN-ACK, data,
ACK) is dropped, so connections open and idle alike go silent. ``Host.restore()`` removes it.
No netfilter or netem is needed.

Addresses come from 198.18.0.0/15, set aside for benchmarking network devices (RFC 2544) and
routed nowhere, one /30 per host: 16,384 hosts, picked at random and retried on a clash, so
parallel test processes do not meet. Names carry this process's id (``rfbed<pid>x<n>``);
``close()`` kills what runs inside and deletes the namespace (the veth pair goes with it), and
``sweep()``, run when a bed is made, deletes namespaces left by test processes that no longer
exist. Making namespaces needs root (CI has it); where it cannot, ``NetbedError`` says why and
the test fails: it does not skip.
"""
from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import signal
import subprocess
from collections.abc import Iterator

from tests.servers import MotoProcess, PostgresProcess, RedisProcess

PREFIX = "rfbed"
_NAME = re.compile(rf"^{PREFIX}(\d+)x(\d+)$")
NETWORK = ipaddress.ip_network("198.18.0.0/15")
BLOCKS = NETWORK.num_addresses // 4
ATTEMPTS = 20


class NetbedError(RuntimeError):
    """A namespace, link or route could not be made (not root, no ``ip``, no veth support)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as exc:
        raise NetbedError("the ip command (iproute2) is not installed; see scripts/setup-system.sh") from exc
    if check and done.returncode != 0:
        raise NetbedError(f"ip {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}"
                          + ("" if os.geteuid() == 0 else " (network namespaces need root)"))
    return done


class Host:
    """Another host on this machine: a network namespace with a link of its own to this one."""

    def __init__(self) -> None:
        self.name = ""
        for _ in range(ATTEMPTS):
            block = random.randrange(1, BLOCKS)
            base = NETWORK.network_address + 4 * block
            name = f"{PREFIX}{os.getpid()}x{block}"
            if ip("netns", "add", name, check=False).returncode != 0:
                continue  # another test process took this block a moment ago
            self.name, self.gateway, self.address = name, str(base + 1), str(base + 2)
            self._outside, self._inside = f"rfh{block}", f"rfp{block}"
            break
        else:
            raise NetbedError(f"no free network namespace after {ATTEMPTS} tries (is this root?)")
        try:
            ip("link", "add", self._outside, "type", "veth", "peer", "name", self._inside)
            ip("link", "set", self._inside, "netns", self.name)
            ip("addr", "add", f"{self.gateway}/30", "dev", self._outside)
            ip("link", "set", self._outside, "up")
            self.run("ip", "addr", "add", f"{self.address}/30", "dev", self._inside)
            self.run("ip", "link", "set", self._inside, "up")
            self.run("ip", "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        self.silent = False

    @property
    def within(self) -> tuple[str, ...]:
        """The command prefix that runs a program inside this host."""
        return ("ip", "netns", "exec", self.name)

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return ip("netns", "exec", self.name, *command)

    def silence(self) -> None:
        """The link goes silent: nothing this host sends reaches this machine any more."""
        self.run("ip", "route", "add", "blackhole", f"{self.gateway}/32")
        self.silent = True

    def restore(self) -> None:
        self.run("ip", "route", "del", "blackhole", f"{self.gateway}/32")
        self.silent = False

    @contextlib.contextmanager
    def silenced(self) -> Iterator[None]:
        self.silence()
        try:
            yield
        finally:
            self.restore()

    def close(self) -> None:
        """Kill everything running inside and delete the namespace, its end of the link with it."""
        if not self.name:
            return
        _remove(self.name)
        ip("link", "del", self._outside, check=False)  # gone with the namespace; a half-made one stays
        self.name = ""


def _remove(name: str) -> None:
    pids = ip("netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    ip("netns", "del", name, check=False)


def sweep() -> list[str]:
    """Delete the namespaces of test processes that are gone (killed before their clean-up)."""
    removed = []
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        match = _NAME.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            _remove(name)
            removed.append(name)
    return removed


class Bed:
    """The servers of a farm, each on a host of its own: PostgreSQL, Redis and S3 (moto)."""

    def __init__(self, *, postgres: bool = True, redis: bool = True, storage: bool = False) -> None:
        sweep()
        self.hosts: list[Host] = []
        self.postgres: PostgresProcess | None = None
        self.redis: RedisProcess | None = None
        self.storage: MotoProcess | None = None
        try:
            if postgres:
                self.db_host = self._host()
                self.postgres = PostgresProcess(host=self.db_host.address, within=self.db_host.within).start()
            if redis:
                self.redis_host = self._host()
                self.redis = RedisProcess(host=self.redis_host.address, within=self.redis_host.within).start()
            if storage:
                self.storage_host = self._host()
                self.storage = MotoProcess(host=self.storage_host.address, within=self.storage_host.within).start()
        except BaseException:
            self.close()
            raise

    def _host(self) -> Host:
        host = Host()
        self.hosts.append(host)
        return host

    def close(self) -> None:
        for server in (self.storage, self.redis, self.postgres):
            if server is not None:
                with contextlib.suppress(Exception):
                    server.stop()
        for host in self.hosts:
            host.close()
