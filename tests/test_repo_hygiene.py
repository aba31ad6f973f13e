"""A fresh clone with nothing beside it runs every test: no test file names a path outside the repository."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
REPO = TESTS.parent

# The shared log corpus that once lived beside the checkout. Spelled in two halves so that this
# file, which the check reads too, does not name it.
OUTSIDE_MARKERS = ("/work/" + "shared", "shared/" + "samples")
# Calls whose string arguments are paths: a ".." or "~" there leaves the repository.
PATH_CALLS = frozenset({"Path", "PurePath", "PosixPath", "open", "join", "copytree", "copy", "copyfile",
                        "glob", "iglob", "listdir", "scandir", "walk", "chdir", "exists", "isdir", "isfile"})


def _mentions_file(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__file__" for n in ast.walk(node))


def _levels_up(node: ast.AST) -> int:
    """How many folders up from `__file__` an expression climbs (`.parent`, `.parents[n]`, `dirname`)."""
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return 1 + _levels_up(node.value)
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int)):
        return node.slice.value + 1 + _levels_up(node.value.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dirname" and node.args:
        return 1 + _levels_up(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute"):
        return _levels_up(node.func.value)
    return 0


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _leaves_repo(text: str) -> bool:
    return text in ("..", "~") or text.startswith(("../", "..\\", "~/")) or "/../" in text


def path_escapes(source: str, depth: int) -> list[str]:
    """Where a Python file lying `depth` folders below the repository root names a path outside it."""
    found: list[str] = []
    tree = ast.parse(source)
    outermost: set[int] = set()
    for node in ast.walk(tree):
        # Only the outermost link of a `.parent.parent...` chain is judged, once.
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)) and id(node) not in outermost:
            levels = _levels_up(node)
            if levels:
                outermost.update(id(n) for n in ast.walk(node) if n is not node)
                if levels > depth + 1 and _mentions_file(node):
                    found.append(f"line {node.lineno}: climbs {levels} folders up from __file__, "
                                 f"past the repository root ({depth + 1} up)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            marker = next((m for m in OUTSIDE_MARKERS if m in node.value), None)
            if marker:
                found.append(f"line {node.lineno}: names {marker!r}, which lies outside the repository")
        path_args: list[ast.AST] = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            path_args = [node.left, node.right]
        elif isinstance(node, ast.Call) and _call_name(node) in PATH_CALLS:
            path_args = list(node.args)
        elif isinstance(node, ast.Call) and _call_name(node) in ("home", "expanduser"):
            found.append(f"line {node.lineno}: reads the user's home folder")
        for arg in path_args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _leaves_repo(arg.value):
                found.append(f"line {arg.lineno}: path {arg.value!r} leaves the repository")
    return sorted(set(found), key=lambda s: (int(s.split()[1].rstrip(":")), s))


SHARED = OUTSIDE_MARKERS[0]


def test_the_check_catches_each_way_out_of_the_repository():
    escapes = {
        "two parents up": "SAMPLES = Path(__file__).resolve().parents[2] / 'logs'",
        "three .parent": "ROOT = Path(__file__).parent.parent.parent",
        "dirname thrice": "ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))",
        "dot-dot segment": "DATA = Path(__file__).parent / '..' / 'x'",
        "dot-dot prefix": "logs = Path('../samples')",
        "dot-dot in join": "p = os.path.join(here, '../../data')",
        "shared corpus": f"SAMPLES = Path('{SHARED}/samples')",
        "home folder": "logs = Path.home() / '.claude' / 'projects'",
    }
    for why, snippet in escapes.items():
        assert len(path_escapes(snippet, depth=1)) == 1, why


def test_the_check_lets_in_repository_paths_and_plain_strings_through():
    fine = [
        "ROOT = Path(__file__).resolve().parents[1]",
        "ROOT = Path(__file__).resolve().parent.parent",
        "FIXTURES = Path(__file__).parent / 'fixtures' / 'real'",
        "queue.add('card_write', '../../etc/passwd', {})",  # hostile input to the code under test
        "assert workspaces_near('/work/shop/api', '/work/shop')",
        "cfg = {'home': Path('/srv/memoir')}",
    ]
    for snippet in fine:
        assert path_escapes(snippet, depth=1) == [], snippet
    assert path_escapes("ROOT = Path(__file__).parents[2]", depth=2) == []


def test_no_test_file_names_a_path_outside_the_repository():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        depth = len(path.parent.relative_to(REPO).parts)
        if escapes := path_escapes(path.read_text(encoding="utf-8"), depth):
            found[str(path.relative_to(REPO))] = escapes
    assert found == {}, "tests must read only what the repository holds (copy data into tests/fixtures)"
