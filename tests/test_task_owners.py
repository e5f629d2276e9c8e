"""Every background task has an owner (the project charter), checked on the source itself.

A task nobody awaits outlives its purpose: cancellation never reaches it, its errors vanish, and the loop closes on
it ("Task was destroyed but it is pending"). So in src/ a task is started only as a child of an
`asyncio.TaskGroup`, by that group's own name, inside the `async with asyncio.TaskGroup() as NAME` block that owns
it (nested functions of the block count: they run while it is open), or by the owner helpers in ALLOWED (each of
which is itself a TaskGroup's). `asyncio.create_task`, `loop.create_task` and `asyncio.ensure_future` are refused
everywhere else. The checker reads the source with `ast`; a synthetic tree shows it catches what it must.

The helper those blocks use for long-lived loops (runtime/task_owner.py) is exercised below as well: its children
end with the block, and an error comes out as itself.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from globaltables.runtime.task_owner import task_owner

SRC = Path(__file__).resolve().parent.parent / "src"

SPAWNERS = {"create_task", "ensure_future"}
# Owner helpers allowed to start tasks outside a TaskGroup block of their own, each with why. Keep it tiny.
ALLOWED = {
    # The owner of background loops that live as long as a block: it creates each child on the TaskGroup it
    # entered (task_owner()), which awaits them all; only the `start` method is outside that block lexically.
    ("globaltables/runtime/task_owner.py", "TaskOwner.start"),
}


def _is_task_group(expression: ast.expr) -> bool:
    """`asyncio.TaskGroup()` or `TaskGroup()`."""
    if not isinstance(expression, ast.Call):
        return False
    function = expression.func
    if isinstance(function, ast.Attribute):
        return function.attr == "TaskGroup" and isinstance(function.value, ast.Name) and function.value.id == "asyncio"
    return isinstance(function, ast.Name) and function.id == "TaskGroup"


class _Spawns(ast.NodeVisitor):
    """Every task-starting call with the names of the TaskGroups open around it and the function it is in."""

    def __init__(self) -> None:
        self.groups: list[str] = []
        self.functions: list[str] = []
        self.found: list[tuple[int, str, str, bool]] = []  # (line, call, qualified function, owned)

    def _scoped(self, node: ast.AST, name: str) -> None:
        self.functions.append(name)
        self.generic_visit(node)
        self.functions.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        names = [
            item.optional_vars.id
            for item in node.items
            if _is_task_group(item.context_expr) and isinstance(item.optional_vars, ast.Name)
        ]
        for item in node.items:
            self.visit(item)
        self.groups.extend(names)
        for statement in node.body:
            self.visit(statement)
        del self.groups[len(self.groups) - len(names) :]

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name in SPAWNERS:
            receiver = function.value if isinstance(function, ast.Attribute) else None
            owned = (
                name == "create_task" and isinstance(receiver, ast.Name) and receiver.id in self.groups
            )
            self.found.append((node.lineno, ast.unparse(function), ".".join(self.functions), owned))
        self.generic_visit(node)


def unowned_tasks(root: Path, allowed: set[tuple[str, str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """(problems, allow-list entries used): every task started outside an owning TaskGroup block and not by an
    allowed helper, as "path:line: call in function"."""
    problems, used = [], set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        spawns = _Spawns()
        spawns.visit(ast.parse(path.read_text(), str(path)))
        for line, call, function, owned in spawns.found:
            if owned:
                continue
            if (relative, function) in allowed:
                used.add((relative, function))
                continue
            problems.append(f"{relative}:{line}: {call}() in {function or '<module>'} has no owning TaskGroup")
    return problems, used


def test_every_task_in_the_package_is_owned_by_a_task_group():
    problems, used = unowned_tasks(SRC, ALLOWED)
    assert not problems, "\n".join(problems)
    # The allow-list shrinks with the code: an entry that no longer starts a task goes.
    assert used == ALLOWED, f"unused allow-list entries: {sorted(ALLOWED - used)}"


def test_the_checker_catches_planted_unowned_tasks_in_a_synthetic_tree(tmp_path: Path):
    files = {
        "pkg/bare.py": (
            "import asyncio\n"
            "async def serve():\n"
            "    asyncio.create_task(work())\n"  # nobody awaits it
        ),
        "pkg/loop.py": (
            "import asyncio\n"
            "class Front:\n"
            "    def __init__(self, loop):\n"
            "        self.sweeper = loop.create_task(sweep())\n"  # a handle, but no owner
            "def fire():\n"
            "    asyncio.ensure_future(close())\n"
        ),
        "pkg/escaped.py": (
            "import asyncio\n"
            "async def run():\n"
            "    async with asyncio.TaskGroup() as group:\n"
            "        group.create_task(a())\n"  # owned
            "        other.create_task(b())\n"  # another object's, inside the block: not this group's child
            "    group.create_task(c())\n"  # the group is closed here
        ),
        "pkg/owned.py": (
            "import asyncio\n"
            "from asyncio import TaskGroup\n"
            "async def run(on_start):\n"
            "    async with TaskGroup() as outer, asyncio.TaskGroup() as inner:\n"
            "        def started():\n"
            "            inner.create_task(chaos())\n"  # a callback run while the block is open
            "        outer.create_task(load(started))\n"
            "async def helper(group):\n"
            "    group.create_task(x())\n"  # a group passed in: allowed only through the allow-list
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    problems, used = unowned_tasks(tmp_path, {("pkg/owned.py", "helper")})
    assert problems == [
        "pkg/bare.py:3: asyncio.create_task() in serve has no owning TaskGroup",
        "pkg/escaped.py:5: other.create_task() in run has no owning TaskGroup",
        "pkg/escaped.py:6: group.create_task() in run has no owning TaskGroup",
        "pkg/loop.py:4: loop.create_task() in Front.__init__ has no owning TaskGroup",
        "pkg/loop.py:6: asyncio.ensure_future() in fire has no owning TaskGroup",
    ]
    assert used == {("pkg/owned.py", "helper")}


# ------------------------------------------------------------------------------------------- the owner helper


async def test_the_owners_children_end_with_its_block():
    started = asyncio.Event()
    ended: list[str] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("forever")

    async with task_owner() as tasks:
        child = tasks.start(forever(), name="forever")
        await started.wait()
    assert ended == ["forever"] and child.cancelled()


async def test_an_error_of_the_block_or_of_a_child_comes_out_as_itself():
    with pytest.raises(OSError, match="port taken"):
        async with task_owner() as tasks:
            tasks.start(asyncio.sleep(3600))
            raise OSError("port taken")

    async def crash() -> None:
        raise ValueError("poller crashed")

    waiting = asyncio.Event()
    with pytest.raises(ValueError, match="poller crashed"):
        async with task_owner() as tasks:
            tasks.start(crash())
            await waiting.wait()  # cancelled by the child's failure, as in any TaskGroup
