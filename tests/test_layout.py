"""The layout rules of docs/ARCHITECTURE.md, checked over the package's source with `ast`.

Every import counts, function-local ones included: a deferred import is still a dependency.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ("cards", "index", "flows")  # lowest first: a floor imports only the floors before it
MAX_LINES = 500
ENV_READERS = {"memoir.cards.config", "memoir.flows.hook_client"}  # the config module and the stdlib hook client
DEFERRED = "# deferred: start-up"


def module_files() -> dict[str, Path]:
    """memoir module name -> file, for every .py under the three floors."""
    out = {}
    for floor in FLOORS:
        for path in sorted((ROOT / floor).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(["memoir", *parts])] = path
    return out


MODULES = module_files()
TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


def _resolve(module: str, node: ast.ImportFrom | ast.Import, alias: ast.alias) -> str | None:
    """The memoir module an import loads, or None for anything outside memoir."""
    if isinstance(node, ast.Import):
        name = alias.name
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".")
            if not MODULES[module].name == "__init__.py":
                pkg = pkg[:-1]
            pkg = pkg[:len(pkg) - node.level + 1]
            base = ".".join(pkg + ([base] if base else []))
        name = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name if name.startswith("memoir.") else None


def imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported memoir module, line, inside a function) for every import statement in `module`."""
    out = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            local = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for alias in child.names:
                    target = _resolve(module, child, alias)
                    if target and target != module:
                        out.append((target, child.lineno, in_function))
            walk(child, local)

    walk(TREES[module], False)
    return out


def floor_of(module: str) -> int:
    return FLOORS.index(module.split(".")[1])


def test_no_module_imports_a_floor_above_its_own():
    upward = [f"{m}:{line} imports {t}" for m in MODULES for t, line, _ in imports(m) if floor_of(t) > floor_of(m)]
    assert upward == []


def test_no_import_circle_even_through_function_local_imports():
    graph = {m: {t for t, _, _ in imports(m)} for m in MODULES}
    # Tarjan's strongly connected components: any component of two or more modules is a circle.
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for m in sorted(graph):
        if m not in index:
            visit(m)
    assert circles == []


def test_no_module_is_over_500_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_os_environ_is_read_only_by_the_config_module_and_the_hook_client():
    found = []
    for m, tree in TREES.items():
        if m in ENV_READERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                    and node.attr in ("environ", "getenv", "putenv", "unsetenv", "environb"):
                found.append(f"{m}:{node.lineno} os.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "os" \
                    and any(a.name in ("environ", "getenv", "putenv") for a in node.names):
                found.append(f"{m}:{node.lineno} from os import")
    assert found == []


def test_every_function_local_import_is_a_marked_deferral():
    unmarked = []
    for m, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(TREES[m]):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    text = " ".join(lines[inner.lineno - 1:inner.end_lineno])
                    if DEFERRED not in text:
                        unmarked.append(f"{m}:{inner.lineno}")
    assert sorted(set(unmarked)) == []


def test_no_private_name_is_imported_from_another_module():
    private = [f"{m}:{node.lineno} {a.name}" for m, tree in TREES.items() for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memoir")
               for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert private == []


def test_apsw_is_named_only_inside_the_index_floor():
    outside = [f"{m}:{node.lineno}" for m, tree in TREES.items() if floor_of(m) != FLOORS.index("index")
               for node in ast.walk(tree)
               if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "apsw" for a in node.names))
               or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "apsw")
               or (isinstance(node, ast.Name) and node.id == "apsw")]
    assert outside == []


STRAY_EXCEPTIONS = """
import importlib, inspect, sys
from memoir.cards.errors import MemoirError
for m in sys.argv[1:]:
    mod = importlib.import_module(m)
    for name, obj in vars(mod).items():
        if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == m \\
                and not issubclass(obj, MemoirError):
            print(f"{m}.{name}")
"""


def test_every_exception_memoir_defines_derives_from_memoir_error():
    # In a child: importing every module imports prefect, which must not happen in the test
    # process before a flow test has chosen Prefect's settings.
    names = [m for m in MODULES if m != "memoir.flows.hook_client"]  # stdlib only: its errors stay in the hook
    out = subprocess.run([sys.executable, "-c", STRAY_EXCEPTIONS, *names], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_the_distribution_installs_one_top_level_name():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = project["tool"]["setuptools"]
    assert "py-modules" not in tool
    assert all(name.startswith("memoir.") for name in tool["packages"])
    assert all(key.startswith("memoir.") for key in tool["package-dir"])
    folders = {"memoir." + ".".join(p.parent.relative_to(ROOT).parts) for floor in FLOORS
               for p in (ROOT / floor).rglob("__init__.py")}
    assert set(tool["packages"]) == folders  # every package folder ships, and nothing else
    assert all(target.split(":")[0].startswith("memoir.") for target in project["project"]["scripts"].values())


@pytest.mark.parametrize("floor", FLOORS)
def test_each_floor_has_its_errors_module_under_the_one_base(floor):
    from memoir.cards.errors import MemoirError

    errors = importlib.import_module(f"memoir.{floor}.errors")
    bases = [obj for obj in vars(errors).values() if inspect.isclass(obj) and issubclass(obj, MemoirError)]
    assert bases


def test_the_architecture_page_lists_every_module_and_names_no_missing_one():
    page = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^((?:cards|index|flows)/[\w/]+\.py)\s", page, flags=re.M))
    on_disk = {str(p.relative_to(ROOT)) for p in MODULES.values()
               if p.name != "__init__.py" or p.read_text(encoding="utf-8").strip()}
    assert on_disk - listed == set()  # a new module gets its line in docs/ARCHITECTURE.md
    assert listed - on_disk == set()  # and a removed one loses it


# Modules that may decode JSON. A tool call's text is parsed by the host readers and by
# `cards/commands.py` alone (issue 37: facts read once); the others here decode their own files, a
# tool's *output* (`signals.decode_output`), or the model's answer. A new module that needs what a
# call said asks `commands` (command_of, changed_paths, added_text, call_settings, plan_items).
JSON_DECODERS = {
    "memoir.cards.commands", "memoir.cards.signals", "memoir.cards.jsonl", "memoir.cards.ledger",
    "memoir.cards.store", "memoir.cards.forget", "memoir.cards.distill.batch_lock",
    "memoir.cards.distill.llm_client", "memoir.cards.distill.llm_slots",
    "memoir.cards.sanitize.fields",  # scrubs every JSON value of every field, tool calls included; reads no fact
    "memoir.cards.project_registry",  # its own state file, `state/projects.json`
}


def test_tool_call_text_is_parsed_only_by_the_readers_and_commands():
    offenders = []
    for name, tree in TREES.items():
        if not name.startswith("memoir.cards.") or name.startswith("memoir.cards.hosts") or name in JSON_DECODERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "loads" and getattr(node.value, "id", "") == "json":
                offenders.append(f"{name}:{node.lineno}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and '"(?:command|cmd)"' in node.value:
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == []
