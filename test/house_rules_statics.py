#!/usr/bin/env python3
"""House rule: a function's static variables in lib/ are never destroyed.

Programs build on threads of their own (Options::compile_in_background) and may still run while exit()
destroys statics: a function-local static that a build reads must outlive them. So a static inside a
function is a reference or pointer to an object made with `new` (`static const auto& x = *new T(...)`),
or of a type with nothing to destroy (the list below). thread_local and constexpr statics are exempt.
Usage: house_rules_statics.py <repo>
"""
import pathlib
import re
import sys

DECLARATION = re.compile(r"^\s+static\s+(const\s+)?(?P<type>[\w:<>, ]+?)\s*(?P<indirect>[*&]?)\s*(?P<name>\w+)\s*(?P<init>=|\{|;)(?P<rest>.*)")
EXEMPT = re.compile(r"^\s+static\s+(constexpr|thread_local|inline)\b|static_assert")
NOTHING_TO_DESTROY = re.compile(r"^(std::mutex|std::once_flag|std::atomic<.*>|std::array<std::atomic<.*>, \w+>|bool|char|int|int8_t|int64_t|"
                                r"uint64_t|size_t|double|float|c10::OperatorHandle)$")


def violations(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = line.split("//")[0]
        match = DECLARATION.match(code)
        if not match or EXEMPT.match(code) or match["indirect"]:
            continue
        if NOTHING_TO_DESTROY.match(match["type"].strip()) or "reinterpret_cast<" in match["rest"]:
            continue
        yield number, line.strip()


def main():
    repo = pathlib.Path(sys.argv[1])
    sources = sorted(p for p in (repo / "lib").rglob("*") if p.suffix in (".h", ".cpp"))
    found = [(p.relative_to(repo), n, text) for p in sources for n, text in violations(p)]
    for path, number, text in found:
        print(f"{path}:{number}: {text}")
    if found:
        print(f"{len(found)} function statics would be destroyed at exit while a build may read them: "
              "make each `static T& x = *new T(...)` (never destroyed)")
        return 1
    print(f"house rules: no function static of {len(sources)} files is destroyed at exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
