#!/usr/bin/env python3
"""Code figures of a Rust source tree, for docs/benchmarks.md: non-test
functions over 100 lines, functions with more than six parameters (`self`
counts, as in clippy's `too_many_arguments`), and `Result<_, String>` in
non-test code. Test code is every item behind `#[cfg(test)]` and every file
under a `tests` folder or named `tests.rs`.

Run: python3 tests/tools/code_figures.py server/src [more roots or files]
Prints one line per finding and a summary line per figure.
"""
import os
import re
import sys


def strip(text):
    """Text with comments, strings and chars blanked (positions kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"'); i = j
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or text.startswith("'\\u{", i):
            j = text.find("'", i + 1) + 1
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


def match_brace(s, i, open_="{", close="}"):
    depth = 0
    for j in range(i, len(s)):
        if s[j] == open_:
            depth += 1
        elif s[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


def test_spans(s):
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", s):
        j = m.end()
        semi, brace = s.find(";", j), s.find("{", j)
        if brace < 0 or (0 <= semi < brace):
            continue
        spans.append((m.start(), match_brace(s, brace)))
    return spans


def params(sig):
    depth, count, cur = 0, 0, ""
    for ch in sig:
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == "," and depth == 0:
            count += bool(cur.strip()); cur = ""
        else:
            cur += ch
    return count + bool(cur.strip())


def files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for d, _, fs in os.walk(root):
            for f in sorted(fs):
                if f.endswith(".rs"):
                    yield os.path.join(d, f)


def main(roots):
    long_fns, many, strings = [], [], []
    for path in files(roots):
        if "/tests/" in path or path.endswith("/tests.rs") or path.endswith("_tests.rs"):
            continue
        s = strip(open(path, encoding="utf-8").read())
        spans = test_spans(s)
        in_test = lambda p: any(a <= p <= b for a, b in spans)
        line = lambda p: s.count("\n", 0, p) + 1
        for m in re.finditer(r"\bfn\s+(\w+)\s*(<[^({]*>)?\s*\(", s):
            if in_test(m.start()):
                continue
            open_paren = m.end() - 1
            close = match_brace(s, open_paren, "(", ")")
            n = params(s[open_paren + 1:close])
            if n > 6:
                many.append(f"{path}:{line(m.start())} {m.group(1)} ({n} parameters)")
            body = s.find("{", close)
            semi = s.find(";", close)
            if body < 0 or (0 <= semi < body):
                continue
            end = match_brace(s, body)
            lines = line(end) - line(m.start()) + 1
            if lines > 100:
                long_fns.append(f"{path}:{line(m.start())} {m.group(1)} ({lines} lines)")
        for m in re.finditer(r"Result<[^;{]*?,\s*String\s*>", s):
            if not in_test(m.start()) and "\n" not in m.group(0):
                strings.append(f"{path}:{line(m.start())} {m.group(0)}")
    for title, rows in (("functions over 100 lines", long_fns),
                        ("functions with more than six parameters", many),
                        ("Result<_, String> in non-test code", strings)):
        for r in rows:
            print(f"  {r}")
        print(f"{title}: {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["server/src"])
