#!/usr/bin/env python3
"""Fails when a name of the vocabulary is spelled outside common/Vocabulary.cpp.

Usage: spelled_once.py --names FILE --source-dir DIR

The names (precisions, formats, alert types, severities, verdicts, check names, risk kinds,
bad values) come from
print_names, which prints the vocabulary itself. Scope: the project's own C++ sources
(.cpp .cc .h .hpp .cu .cuh .inc) under checks/, common/, runtime/, tools/, examples/ and bench/.
Not scanned: test/ (its assertions and expected outputs spell the names on purpose), rules/
(YAML), knowledge/ and docs (Markdown), web assets, third_party/.

A name counts as spelled where a C++ string literal is exactly the name ("CONFIRMED"), or holds it
as an SQL string ('ERROR'). Comments and longer text that mention a name ("fp16 max") do not
count. Check names may also be spelled where the checks are registered
(checks/MpnannyTidyModule.cpp), and OTHER_MEANINGS lists the few places where the same word is
another vocabulary's ("error" as JSON-RPC's member). The literals are found by Pygments' C++ lexer.
"""
import argparse
import os
import sys

from pygments.lexers import CppLexer
from pygments.token import String

VOCABULARY_FILE = os.path.join("common", "Vocabulary.cpp")
CHECK_REGISTRY = os.path.join("checks", "MpnannyTidyModule.cpp")
SCANNED_FOLDERS = ["checks", "common", "runtime", "tools", "examples", "bench"]
# The same word in another vocabulary: (file, name) -> what it is there.
OTHER_MEANINGS = {
    ("tools/mcp/Protocol.cpp", "error"): "JSON-RPC's error member",
    ("tools/mpnanny-check/HeaderCache.cpp", "error"): "a field of a header cache entry",
    ("tools/mpnanny/html.cpp", "error"): "the browser's error event, in the report's script",
    ("common/KnowledgeBase.cpp", "banned"): "autocast's policy for an op, beside the risk kinds",
    ("common/KnowledgeBase.cpp", "inf"): "YAML's spelling of infinity in a range",
    ("checks/utils/RangeAnalysis.cpp", "inf"): "an infinite bound, as a message prints it",
    ("tools/mpnanny/database.cpp", "inf"): "an infinite double, as JSON text",
}
EXTENSIONS = (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh", ".inc")


def read_names(path):
    names = {}
    with open(path) as f:
        for line in f:
            kind, name = line.split()
            names.setdefault(name, kind)
    return names


def sources(root):
    for folder in SCANNED_FOLDERS:
        for directory, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if name.endswith(EXTENSIONS):
                    yield os.path.relpath(os.path.join(directory, name), root)


def string_literals(text):
    """(line, content) of each string literal, its pieces joined (the lexer splits escapes out)."""
    line, content, inside = 1, None, False
    for token, value in CppLexer(stripnl=False, ensurenl=False).get_tokens(text):
        if token in String.Char or token in String.Affix or token in String.Delimiter:
            pass
        elif token in String and value == '"':
            if inside:
                yield start, content
            else:
                start, content = line, ""
            inside = not inside
        elif token in String and inside:
            content += value
        line += value.count("\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--names", required=True)
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    names = read_names(args.names)
    quoted = {"'%s'" % name: name for name in names}
    spelled = []
    scanned = 0
    for path in sources(args.source_dir):
        if path == VOCABULARY_FILE:
            continue
        scanned += 1
        with open(os.path.join(args.source_dir, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for line, content in string_literals(text):
            found = [content] if content in names else [name for q, name in quoted.items() if q in content]
            for name in found:
                if path == CHECK_REGISTRY and names[name] == "check":
                    continue
                if (path.replace(os.sep, "/"), name) in OTHER_MEANINGS:
                    continue
                spelled.append(f"{path}:{line}: {names[name]} name \"{name}\" spelled outside {VOCABULARY_FILE}")
    for message in spelled:
        print(message)
    print(f"{scanned} files scanned, {len(names)} names, {len(spelled)} spelled outside the vocabulary")
    return 1 if spelled else 0


if __name__ == "__main__":
    sys.exit(main())
