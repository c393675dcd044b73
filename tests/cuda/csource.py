"""Reading generated CUDA source in tests: the operands of inline PTX, and C integer
expressions evaluated at chosen values (so a pin holds numbers, not the emitter's spelling)."""

from __future__ import annotations

import re


def _operands(rest: str) -> list[str]:
    """``"r"(a), "l"(&b)`` -> ``["a", "&b"]``: split at top-level commas, constraints dropped."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(rest + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            operand = rest[start:i].strip()
            if operand:
                match = re.fullmatch(r'"[a-z=+]+"\((.*)\)', operand)
                assert match, operand
                out.append(match.group(1))
            start = i + 1
    return out


def asm_ops(source: str, prefix: str) -> list[list[str]]:
    """Input operands of every ``asm volatile`` whose instruction starts with ``prefix``,
    in source order."""
    found = []
    for line in source.splitlines():
        match = re.match(r'\s*asm volatile\("([^"]*)"\s*:\s*:\s*(.*?)\s*:\s*"memory"\);$', line)
        if match and match.group(1).startswith(prefix):
            found.append(_operands(match.group(2)))
    return found


def evaluate(expr: str, **env: int) -> int:
    """A C integer expression of the generated code, evaluated with ``env`` (blockIdx.x as
    ``bx``, blockIdx.y as ``by``, gridDim.x as ``gx``, threadIdx.x as ``tx``, variables by
    name); operands here are non-negative, so C's ``/`` is Python's ``//``."""
    text = re.sub(r"\((?:int|u?int(?:16|32)_t)\)", "", expr)
    for c_name, short in (("blockIdx.x", "bx"), ("blockIdx.y", "by"), ("gridDim.x", "gx")):
        text = text.replace(c_name, short)
    text = text.replace("threadIdx.x", "tx")
    text = re.sub(r"(\d+)u\b", r"\1", text).replace("/", "//")
    return int(eval(text, {}, dict(env)))  # the generated expression, no names beyond env


def lets(source: str, name: str) -> list[str]:
    """The expressions of every ``[u]int32_t NAME = ...;`` (and ``NAME_<n>``) in the source."""
    return re.findall(rf"\bu?int32_t {name}(?:_\d+)? = (.*);", source)


def run_lets(source: str, env: dict[str, int]) -> dict[str, int]:
    """Every ``[u]int32_t NAME = EXPR;`` of ``source`` in order, each evaluated with ``env``
    and what came before it; a statement that reads anything else (a register, a call) is
    skipped, so a value given in ``env`` stands for it."""
    env = dict(env)
    for name, expr in re.findall(r"\bu?int32_t (\w+) = (.*);", source):
        try:
            env[name] = evaluate(expr, **env)
        except (NameError, SyntaxError, TypeError):
            continue
    return env
