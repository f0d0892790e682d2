#!/usr/bin/env python3
"""Independent recomputation of groundgate identities and registry hashes.

Reads a `GET /v1/registry` body (or `groundgate registry export` output) on
stdin and prints, for every capability, "name identity" recomputed from its
published sem/alg/impl layers, then "registry HASH". Written from RFC 8785
and SPEC.md alone, with the Python standard library: it shares no code with
the Go implementation, which is the point.
"""
import hashlib
import json
import sys
from decimal import Decimal


def es6_number(x):
    """Serialise a number as ECMAScript's Number.prototype.toString does."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("NaN and infinities are not JSON")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest digits that round-trip, as ES6 requires.
    _, digits, exp = Decimal(repr(abs(x))).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    s = "".join(map(str, digits))
    k = len(s)
    n = k + exp  # value = 0.s × 10^n
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + s
    else:
        e = n - 1
        mant = s[0] + ("." + s[1:] if k > 1 else "")
        out = mant + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def es6_string(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif c < 0x20:
            out.append("\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return es6_number(v)
    if isinstance(v, str):
        return es6_string(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(es6_string(k) + ":" + jcs(v[k]) for k in keys) + "}"
    raise TypeError(type(v))


def sha256(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def main():
    body = json.load(sys.stdin)
    ids = []
    for cap in body["capabilities"]:
        layers = {"alg": cap["alg"], "impl": cap["impl"], "sem": cap["sem"]}
        ident = sha256(jcs(layers).encode("utf-8"))
        ids.append(ident)
        print(cap["name"], ident)
    print("registry", sha256("".join(i + "\n" for i in sorted(ids)).encode("ascii")))


if __name__ == "__main__":
    main()
