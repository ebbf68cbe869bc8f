"""schema_check.py SCHEMA DOC [--lines]: DOC (a --json output) against SCHEMA (socktune
--schema): exactly one JSON document, an object (--lines: one document a line, each an
object); every member's name in the table (a group's members as "group.member", or the
table's ".member"), with the table's JSON type (null allowed); no string value that is
logfmt (key=value pairs: what a typed value was before).  Prints "ok", or each mismatch, one
a line.  t_schema imports it (load_schema, problems)."""
import json
import re
import sys

LOGFMT = re.compile(r"[a-z_.]+=\S+ +[a-z_.]+=")

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "group": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
}


def load_schema(path):
    table = {}
    for line in open(path, encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        name, kind = line.split()[:2]
        table[name] = kind
    return table


def check(table, value, where, group, bad):
    """The members of object value (group: its name when it is a group)."""
    for name, v in value.items():
        full = "%s.%s" % (group, name) if group else name
        kind = table.get(full) if group else table.get(name)
        if group and kind is None:
            kind = table.get("." + name)
        path = "%s.%s" % (where, name) if where else name
        if kind is None:
            bad.append("%s: %s is not in the schema" % (path, full))
            continue
        if v is not None and not TYPES[kind](v):
            bad.append("%s: %r is not a %s" % (path, v, kind))
            continue
        walk(table, v, path, full if kind == "group" else None, bad)


def walk(table, v, path, group, bad):
    if isinstance(v, dict):
        check(table, v, path, group, bad)
    elif isinstance(v, list):
        for i, item in enumerate(v):
            walk(table, item, "%s.%d" % (path, i), None, bad)
    elif isinstance(v, str) and LOGFMT.search(v):
        bad.append("%s: a logfmt string: %r" % (path, v[:60]))


def problems(table, doc):
    """Every mismatch of one document (an object) with the table."""
    bad = []
    if not isinstance(doc, dict):
        return ["not an object"]
    if not isinstance(doc.get("schema"), int) or not isinstance(doc.get("command"), str):
        bad.append("no schema or command")
    check(table, doc, "", None, bad)
    return bad


def main():
    table = load_schema(sys.argv[1])
    text = open(sys.argv[2], encoding="utf-8").read()
    lines = len(sys.argv) > 3 and sys.argv[3] == "--lines"
    bad = []
    docs = []
    try:
        docs = [json.loads(t) for t in text.splitlines()] if lines else [json.loads(text)]
    except ValueError as e:
        bad.append("not one JSON document%s: %s" % (" a line" if lines else "", e))
    if not docs and not bad:
        bad.append("no document")
    for n, d in enumerate(docs):
        bad += ["document %d: %s" % (n + 1, b) if len(docs) > 1 else b for b in problems(table, d)]
    print("\n".join(bad[:20]) if bad else "ok")


if __name__ == "__main__":
    main()
