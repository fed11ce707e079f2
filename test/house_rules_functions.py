#!/usr/bin/env python3
"""House rule: no function of lib/ or include/ is longer than a cap (one responsibility per function).

A function is a definition whose opening brace ends a line holding its parameter list, at any depth
outside another function's body; its length is the lines from that line to its closing brace.
Usage: function_sizes.py <repo> [cap]
"""
import pathlib
import re
import sys

CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|catch|try|return|case)\b|=\s*\[|\]\s*\(.*\)\s*(mutable\s*)?(->.*)?\{$|^\s*\[")
TYPE = re.compile(r"^\s*(namespace|struct|class|enum|union|extern)\b")


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0].rstrip()


def functions(path):
    lines = [strip(l) for l in path.read_text(errors="replace").splitlines()]
    depth, start, body_depth, out = 0, None, None, []
    for number, line in enumerate(lines, 1):
        opens_function = (start is None and line.endswith("{") and ")" in line and not CONTROL.search(line)
                          and not TYPE.search(line))
        if opens_function:
            first = number
            while first > 1 and "(" not in " ".join(lines[first - 1:number]):
                first -= 1
            start, body_depth, name = first, depth, line.strip()
        depth += line.count("{") - line.count("}")
        if start is not None and depth <= body_depth:
            out.append((number - start + 1, name, start))
            start = None
    return out


def main():
    repo = pathlib.Path(sys.argv[1])
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    sources = sorted(p for d in ("lib", "include") for p in (repo / d).rglob("*") if p.suffix in (".h", ".cpp"))
    too_long = [(n, p.relative_to(repo), line, name) for p in sources for n, name, line in functions(p) if n > cap]
    for n, path, line, name in sorted(too_long, reverse=True):
        print(f"{path}:{line}: {n} lines: {name[:90]}")
    if too_long:
        print(f"{len(too_long)} functions longer than {cap} lines; split them by responsibility")
        return 1
    print(f"house rules: every function of {len(sources)} files is at most {cap} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
