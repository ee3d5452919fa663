"""read.py reads each case's line as Python's json module does, and prints
what it sees at the case's probe paths (docs/readers.md):

  python-json        json.loads of the line as str, decoded from UTF-8
                     strictly, as the Python SDK's stdio client decodes
                     the server's output (TextReceiveStream, errors
                     "strict") before it parses each line;
  python-json-bytes  json.loads of the line's bytes, which detects the
                     encoding itself (a UTF-8 BOM is then skipped).

The Python SDK itself parses each line with pydantic's
model_validate_json (pydantic-core's own JSON parser), which is not in
the image: these readers are the standard library's.

Input on stdin and output on stdout as read.mjs's; it runs in
mcpsandbox/python, the host's python3 and its standard library.
"""

import base64
import json
import platform
import re
import sys


class Absent:
    pass


ABSENT = Absent()


def parse_path(p):
    out = []
    for part in p.split("."):
        m = re.fullmatch(r"([^\[]*)((?:\[\d+\])*)", part)
        if m.group(1):
            out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def walk(v, path):
    for k in path:
        if isinstance(k, int):
            if not isinstance(v, list) or k >= len(v):
                return ABSENT
        elif not isinstance(v, dict) or k not in v:
            return ABSENT
        v = v[k]
    return v


def render(v):
    if v is ABSENT:
        return "absent"
    return json.dumps(v, ensure_ascii=True, allow_nan=True, sort_keys=True, separators=(",", ":"))


def short(e):
    return (type(e).__name__ + ": " + " ".join(str(e).split()))[:300]


def read(line, probes, as_bytes):
    out = {}
    try:
        msg = json.loads(line if as_bytes else line.decode("utf-8", "strict"))
    except (UnicodeDecodeError, ValueError) as e:
        stage = "decode" if isinstance(e, UnicodeDecodeError) else "parse"
        for p in probes:
            out[p] = "0" if p == "messages" else "error: " + stage
        out["_detail"] = short(e)
        return out
    for p in probes:
        if p == "messages":
            out[p] = "1"
        elif p == "matched":
            out[p] = "n/a"
        else:
            out[p] = render(walk(msg, parse_path(p)))
    return out


def main():
    cases = json.loads(sys.stdin.buffer.read())["cases"]
    results = {}
    for c in cases:
        line = base64.b64decode(c["line"])
        results[c["key"]] = {
            "python-json": read(line, c["probes"], False),
            "python-json-bytes": read(line, c["probes"], True),
        }
    out = {"versions": {"python": platform.python_version()}, "results": results}
    sys.stdout.write(json.dumps(out) + "\n")


main()
