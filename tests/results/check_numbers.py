#!/usr/bin/env python3
"""Every number a published README states must be in the committed data beside it.

  check_numbers.py README.md [README.md ...]

For each README, the data are the JSON files in its directory and below (analysis.json, report.json,
reruns.json; not the figures' CSVs, whose thousands of points would match any short number), the
hosts' fingerprints (env*.txt) and analyses as `saddlescope analyze` printed them (verdict*.txt, whose
percentages are read as fractions). A number in
the README's prose or tables (not in code, links or headings) counts as found when some data value, shown
with the same number of decimals, reads the same: 0.03063 is found in 0.030634..., 2.30 in 2.2962..., a
percentage 0.72% in 0.0072..., and a number written without a sign in either sign of a value (tables
say which difference they show). Checked: every decimal number, every percentage, every m·10ⁿ and
every integer written with a thousands separator (1,248) or followed by × (a ratio); plain small integers (seeds,
steps, counts of configs) are settings, not measurements, and are left alone.

What it cannot see: a number that is in the data but stands for another quantity (a run's value quoted
as a group's median). It catches numbers that are in no data file at all: typed, copied from an older
run, rounded wrongly. Exits 1 listing each number not found with its line, 0 when all are found.
Standard library only."""
import json, math, os, re, sys

NUMBER = re.compile(r"(?<![\w.\-−/])([−\-+]?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(%|×|·10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?(?![\w.]*[\w/])")
SUPERSCRIPT = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")


def data_values(root, readme):
    values = []
    def walk(v):
        if isinstance(v, bool) or v is None: return
        if isinstance(v, (int, float)): values.append(float(v))
        elif isinstance(v, dict): [walk(x) for x in v.values()]
        elif isinstance(v, list): [walk(x) for x in v]
        elif isinstance(v, str):
            for m in re.finditer(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", v): values.append(float(m.group()))
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if p == readme: continue
            if f.endswith(".json"):
                with open(p, encoding="utf-8") as fh: walk(json.load(fh))
            elif f.startswith("env") and f.endswith(".txt"):  # the hosts' fingerprints
                with open(p, encoding="utf-8", errors="replace") as fh: walk(fh.read())
            elif f.startswith("verdict") and f.endswith(".txt"):  # an analysis as `analyze` printed it
                with open(p, encoding="utf-8", errors="replace") as fh:
                    for m in re.finditer(r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(%?)", fh.read()):
                        values.append(float(m.group(1)) / (100 if m.group(2) else 1))
    return [v for v in values if math.isfinite(v)]


def prose(text):
    """The README without fenced code, inline code, link targets and headings, line by line."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith("#"): continue
        line = re.sub(r"`[^`]*`", " ", line)
        line = re.sub(r"\]\([^)]*\)", "]", line)
        line = re.sub(r"\b[0-9a-f]{7,40}\b", " ", line)  # commit hashes
        out.append((n, line))
    return out


def claims(text):
    for n, line in prose(text):
        for m in NUMBER.finditer(line):
            sign, digits, unit = m.groups()
            if "," not in digits and "." not in digits and unit is None: continue  # a setting, not a measure
            yield n, m.group(0), ("-" if sign in "−-" and sign else "") + digits.replace(",", ""), unit


def check(readme):
    root = os.path.dirname(os.path.abspath(readme))
    values = data_values(root, os.path.abspath(readme))
    shown = {}  # decimals -> the data values as shown with that many decimals (and ×100 for percentages)
    def forms(decimals):
        if decimals not in shown:
            s = set()
            for v in values:
                s.add(f"{v:.{decimals}f}")
            shown[decimals] = s
        return shown[decimals]
    missing = []
    with open(readme, encoding="utf-8") as fh:
        text = fh.read()
    for n, token, number, unit in claims(text):
        decimals = len(number.split(".")[1]) if "." in number else 0
        if unit and unit.startswith("·10"):  # m·10ⁿ: compare mantissas at the digits shown
            exponent = int(unit[3:].translate(SUPERSCRIPT))
            if any(f"{v / 10 ** exponent:.{decimals}f}" in (number, number.lstrip("-")) for v in values):
                continue
            missing.append(f"{readme}:{n}: {token} is in no data file beside it")
            continue
        if unit == "%":  # a fraction shown as a percentage: two more decimals of the fraction
            x = float(number) / 100
            number = f"{x:.{decimals + 2}f}"
            decimals += 2
        candidates = forms(decimals)
        if number in candidates or (not number.startswith("-") and "-" + number in candidates):
            continue
        missing.append(f"{readme}:{n}: {token} is in no data file beside it")
    return missing


def main(argv):
    if len(argv) < 2:
        print("usage: check_numbers.py README.md [README.md ...]", file=sys.stderr)
        return 2
    missing = []
    for readme in argv[1:]:
        if not os.path.isfile(readme):
            print(f"check_numbers.py: {readme}: no such file", file=sys.stderr)
            return 2
        missing += check(readme)
    for m in missing: print(m)
    print(f"{len(missing)} numbers not found in the data" if missing else "every checked number is in the data")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
