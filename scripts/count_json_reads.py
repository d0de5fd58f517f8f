#!/usr/bin/env python3
"""Count string-keyed JSON reads in product code: the measure of issue 43 ("one typed contract").

  count_json_reads.py [ROOT] [--list] [--max N]

A read is a value looked up by a key typed as a string literal, the way untyped JSON (or a map standing
in for a type) is read:  x["key"] not followed by an assignment,  .at("key"),  .value("key", ...),
config_value("key"),  .contains("key").  Writes (j["key"] = v) are not reads. Product code is every
.cpp/.h under app, analysis, base, gpu, kernels, probes, reference, reports, study and trainer; store/
is left out (its readers are where raw JSON is meant to be read, into types) and so are tests, fuzz
targets and benchmarks. Comments are skipped (lines whose code starts with //).

Prints a count per module and the total; --list prints every read as file:line: text; --max N exits 1
when the total exceeds N (a ceiling a test can hold). Standard library only."""
import os, re, sys

MODULES = ["app", "analysis", "base", "gpu", "kernels", "probes", "reference", "reports", "study", "trainer"]
READ = re.compile(r'\[\s*"[A-Za-z_][\w.]*"\s*\](?!\s*=(?!=))'  # x["key"], not x["key"] = ...
                  r'|\.at\(\s*"[A-Za-z_][\w.]*"\s*\)'
                  r'|\.value\(\s*"[A-Za-z_][\w.]*"\s*,'
                  r'|config_value\(\s*"[A-Za-z_][\w.]*"\s*\)'
                  r'|\.contains\(\s*"[A-Za-z_][\w.]*"\s*\)')


def reads(root):
    for module in MODULES:
        for d, _, files in os.walk(os.path.join(root, module)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".cu")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        code = line.strip()
                        if code.startswith("//"):
                            continue
                        for m in READ.finditer(line):
                            yield module, os.path.relpath(path, root), n, m.group(0)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ceiling = None
    if "--max" in argv:
        i = argv.index("--max")
        if i + 1 >= len(argv) or not argv[i + 1].isdigit():
            print("count_json_reads.py: --max needs a whole number", file=sys.stderr)
            return 2
        ceiling = int(argv[i + 1])
        args = [a for a in args if a != argv[i + 1]]
        root = args[0] if args else root
    found = list(reads(root))
    if "--list" in argv:
        for _, path, n, text in found:
            print(f"{path}:{n}: {text}")
    for module in MODULES:
        count = sum(1 for r in found if r[0] == module)
        if count:
            print(f"{module:<10} {count:5d}")
    print(f"{'total':<10} {len(found):5d}")
    if ceiling is not None and len(found) > ceiling:
        print(f"count_json_reads.py: {len(found)} string-keyed JSON reads, over the ceiling of {ceiling}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
