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


def _mnemonic(asm: str) -> str:
    """The instruction of an inline-PTX string, past its register declarations and the
    ``setp`` that computes a predicate operand."""
    for raw in asm.replace("\\n", "\n").replace("{", "").split("\n"):
        part = raw.strip()
        if part and not part.startswith((".reg", "setp.")) and part != "}":
            return part.split()[0].rstrip(";")
    return ""


def statements(source: str) -> list[str]:
    """The kernel body's synchronising statements in source order: each inline-PTX
    instruction by its mnemonic, ``wait <barrier>`` for an mbarrier wait, ``__syncthreads``,
    and ``if`` / ``}`` for the blocks around them."""
    body = source.split('extern "C" __global__', 1)[1]
    out = []
    for line in body.splitlines()[1:]:
        text = line.strip()
        asm = re.match(r'asm volatile\("((?:[^"\\]|\\.)*)"', text)
        if asm:
            out.append(_mnemonic(asm.group(1)))
        elif text.startswith("tm_mbarrier_wait("):
            barrier = re.search(r"\(uint8_t\*\)(\w+)", text)
            out.append(f"wait {barrier.group(1) if barrier else '?'}")
        elif text == "__syncthreads();":
            out.append("__syncthreads")
        elif text.startswith("if ("):
            out.append("if")
        elif text == "}":
            out.append("}")
    return out
