"""Separate network stacks on one machine: one Linux network namespace per "host", joined by veth pairs to a bridge
in the root namespace, each with its own address on a private test subnet that exists only inside this machine.

Needs root and a kernel that lets us create namespaces, veth pairs and a bridge; `available()` says why not, so a
test can skip with the reason. Everything made here is removed by `Namespaces.remove()` (names carry the test's
PID, so concurrent runs do not collide).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

SUBNET = "10.231.{}"  # 10.231.<n>.0/24: a test subnet of our own namespaces only


def _ip(*arguments: str, netns: str | None = None) -> None:
    command = ["ip", *arguments] if netns is None else ["ip", "netns", "exec", netns, "ip", *arguments]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=30)


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"gtprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _ip("link", "add", f"gtpb{os.getpid() % 10000}", "type", "bridge")
        _ip("link", "del", f"gtpb{os.getpid() % 10000}")
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        return f"the kernel refuses network namespaces, veth or bridges here: {detail.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass
class Namespaces:
    """`count` namespaces with addresses 10.231.<net>.1..count; the bridge holds .254 in the root namespace."""

    count: int
    tag: str = field(default_factory=lambda: str(os.getpid() % 100000))
    net: int = field(default_factory=lambda: 16 + os.getpid() % 200)
    names: list[str] = field(default_factory=list)

    @property
    def bridge(self) -> str:
        return f"gtbr{self.tag}"

    def address(self, index: int) -> str:
        return f"{SUBNET.format(self.net)}.{index + 1}"

    def create(self) -> Namespaces:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{SUBNET.format(self.net)}.254/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for index in range(self.count):
                name = f"gt{self.tag}h{index}"
                outside, inside = f"gt{self.tag}v{index}", f"gt{self.tag}i{index}"
                _ip("netns", "add", name)
                self.names.append(name)
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
                _ip("link", "set", inside, "netns", name)
                _ip("link", "set", outside, "master", self.bridge)
                _ip("link", "set", outside, "up")
                _ip("link", "set", "lo", "up", netns=name)
                _ip("addr", "add", f"{self.address(index)}/24", "dev", inside, netns=name)
                _ip("link", "set", inside, "up", netns=name)
        except BaseException:
            self.remove()
            raise
        return self

    def remove(self) -> None:
        for name in self.names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        for index in range(self.count):
            subprocess.run(["ip", "link", "del", f"gt{self.tag}v{index}"], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.names.clear()
