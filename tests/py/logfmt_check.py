"""logfmt_check.py SCHEMA FILE...: the library's log lines in FILE(s) against SCHEMA (socktune
--schema).  Every line that starts "socktune " is one: "socktune pid=N level=L event=E" then
key=value pairs, a value bare (no blank, no quote) or quoted ("..." with \\" and \\\\
escapes).  Each key is a name of the table (keepalive.idle, net.core.somaxconn), or a
group's member flattened (backlog.app: group backlog, member .app), or an array's item
(fix.0: array fix); a group, an object or an array is never a value of its own, and no key
comes twice in a line.  The value has the table's type: integer an int, boolean 0 or 1,
number a float, string anything.  Prints one line per problem ("ok" when none), each with
the line it is about; the events seen go to stderr, one a line, for the caller to count."""
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import schema_check  # noqa: E402 (load_schema: one reader of the table)

INT = re.compile(r"-?[0-9]+\Z")
NUM = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\Z")
VALUE_OK = {
    "integer": lambda v: bool(INT.match(v)),
    "boolean": lambda v: v in ("0", "1"),
    "number": lambda v: bool(NUM.match(v)),
    "string": lambda v: True,
}


def pairs(text):
    """The key=value pairs of text, or raises ValueError where it is not logfmt."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        m = re.compile(r"([A-Za-z0-9_.]+)=").match(text, i)
        if not m:
            raise ValueError("not a key=value pair at %r" % text[i:i + 30])
        key, i = m.group(1), m.end()
        if i < n and text[i] == '"':
            i += 1
            v = []
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                v.append(text[i])
                i += 1
            if i >= n:
                raise ValueError("an unterminated quote after %s=" % key)
            i += 1
            if i < n and text[i] != " ":
                raise ValueError("text after the closing quote of %s=" % key)
            value = "".join(v)
        else:
            j = text.find(" ", i)
            j = n if j < 0 else j
            value = text[i:j]
            if '"' in value:
                raise ValueError("a quote inside the bare value of %s=" % key)
            i = j
        out.append((key, value))
    return out


def kind_of(table, key):
    """The table's type for a flattened key, or None; "item" for an array's item."""
    if key in table:
        return table[key]
    head, dot, tail = key.rpartition(".")
    if dot and tail.isdigit() and table.get(head) == "array":
        return "item"
    group, dot, member = key.partition(".")
    if dot and table.get(group) == "group":
        return table.get("." + member)
    return None


def line_problems(table, line):
    bad = []
    try:
        kv = pairs(line[len("socktune "):])
    except ValueError as e:
        return [str(e)], None
    keys = [k for k, _ in kv]
    if keys[:3] != ["pid", "level", "event"]:
        bad.append("does not start with pid= level= event=")
    seen = set()
    for key, value in kv:
        if key in seen:
            bad.append("%s twice" % key)
        seen.add(key)
        kind = kind_of(table, key)
        if kind is None:
            bad.append("%s is not in the schema" % key)
        elif kind in ("group", "object", "array"):
            bad.append("%s is a %s, written as one value (%r)" % (key, kind, value))
        elif kind != "item" and not VALUE_OK[kind](value):
            bad.append("%s=%r is not a %s" % (key, value, kind))
    return bad, dict(kv).get("event")


def main():
    table = schema_check.load_schema(sys.argv[1])
    bad, events, lines = [], set(), 0
    for path in sys.argv[2:]:
        for line in open(path, encoding="utf-8", errors="replace"):
            line = line.rstrip("\n")
            if not line.startswith("socktune pid="):
                continue
            lines += 1
            problems, event = line_problems(table, line)
            if event:
                events.add(event)
            bad += ["%s  [%s]" % (p, line[:200]) for p in problems]
    for e in sorted(events):
        sys.stderr.write(e + "\n")
    if not lines:
        bad.append("no library line at all")
    # each problem once (the same line shape repeats across runs)
    seen, out = set(), []
    for b in bad:
        if b.split("  [")[0] + b.split("event=")[-1].split(" ")[0] not in seen:
            seen.add(b.split("  [")[0] + b.split("event=")[-1].split(" ")[0])
            out.append(b)
    print("\n".join(out) if out else "ok")


if __name__ == "__main__":
    main()
