#!/usr/bin/env python3
"""Structural check of a saddlescope report page (report/index.html), standard library only.

    check_html.py INDEX_HTML

Fails (exit 1, one line per problem) when the page is not self-contained or not well formed:
  - an element id appears twice (inline SVG figures must not share marker ids);
  - an internal reference (href="#x", xlink:href="#x", url(#x)) names no id on the page;
  - a relative link (href="figures/loss.png") names no file beside the page;
  - any external URL (http:, https:, //host, data: pulled from elsewhere) outside the SVG xmlns
    declarations, or any <script>, <link>, <iframe>, <img src>, @import: the page must need no network
    and no JavaScript;
  - tags that do not nest (a figure's SVG cut short, say).
"""
import html.parser
import os
import re
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
FORBIDDEN_TAGS = {"script", "link", "iframe", "object", "embed", "img", "base"}
URL_ATTRS = {"href", "xlink:href", "src", "action", "poster", "data"}
NAMESPACE_ATTRS = {"xmlns", "xmlns:xlink"}


class Checker(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.refs, self.files, self.problems, self.stack = {}, [], [], [], []
        self.in_style = False
        self.style = []

    def problem(self, what):
        self.problems.append(f"line {self.getpos()[0]}: {what}")

    def handle_starttag(self, tag, attrs):
        self.visit(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
        self.in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.visit(tag, attrs)

    def visit(self, tag, attrs):
        if tag in FORBIDDEN_TAGS:
            self.problem(f"<{tag}> is not allowed in a self-contained page")
        for name, value in attrs:
            value = value or ""
            if name == "id":
                if value in self.ids:
                    self.problem(f"id '{value}' appears twice (first on line {self.ids[value]})")
                self.ids[value] = self.getpos()[0]
            if name.startswith("on"):
                self.problem(f"event handler attribute {name} (JavaScript) is not allowed")
            if name in NAMESPACE_ATTRS:
                continue
            if name in URL_ATTRS:
                if value.startswith("#"):
                    self.refs.append((value[1:], self.getpos()[0]))
                elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//", value):
                    self.problem(f"external reference {name}=\"{value}\"")
                else:
                    self.files.append((value, self.getpos()[0]))
            if name == "style":
                self.check_css(value)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problem(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()
        if tag == "style":
            self.in_style = False

    def handle_data(self, data):
        if self.in_style:
            self.check_css(data)
        for m in re.finditer(r"url\(#([^)]+)\)", data):
            self.refs.append((m.group(1), self.getpos()[0]))

    def check_css(self, css):
        if "@import" in css:
            self.problem("@import in CSS")
        for m in re.finditer(r"url\(\s*['\"]?([^)'\"]*)", css):
            target = m.group(1)
            if target.startswith("#"):
                self.refs.append((target[1:], self.getpos()[0]))
            else:
                self.problem(f"CSS url({target}) is not an internal reference")


def main(argv):
    if len(argv) != 2:
        print("usage: check_html.py INDEX_HTML", file=sys.stderr)
        return 2
    path = argv[1]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    c = Checker()
    c.feed(text)
    c.close()
    # Attribute values hold url(#...) too (fill='url(#fig-x-gradient)').
    for m in re.finditer(r"url\(#([^)]+)\)", text):
        c.refs.append((m.group(1), text.count("\n", 0, m.start()) + 1))
    for ref, line in c.refs:
        if ref not in c.ids:
            c.problems.append(f"line {line}: internal reference #{ref} names no element")
    base = os.path.dirname(os.path.abspath(path))
    for target, line in c.files:
        if not os.path.exists(os.path.join(base, target.split("#")[0])):
            c.problems.append(f"line {line}: link {target} names no file beside the page")
    if c.stack:
        c.problems.append(f"unclosed at the end: {' '.join(c.stack)}")
    if not text.lstrip().lower().startswith("<!doctype html>"):
        c.problems.append("no <!DOCTYPE html>")
    if c.problems:  # one line last on stderr: what a caller that keeps the last line shows
        print(f"{path}: {len(c.problems)} problems: " + "; ".join(c.problems[:5]), file=sys.stderr)
    if not c.problems:
        print(f"{path}: ok ({len(c.ids)} ids, {len(c.refs)} internal references, {len(c.files)} file links)")
    return 1 if c.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
