#!/usr/bin/env python3
"""Recompute a groundgate call footprint's hash without groundgate.

usage: verify-call.py FOOTPRINT.json

FOOTPRINT.json is a call footprint as GET /v1/calls/{hash} returns it (or
the "call" member of a POST /v1/calls answer: give it alone). Written from
SPEC section 14 and RFC 8785 with the Python standard library only; it
shares no code with the Go implementation, which is the point. It checks:

  1. the seven layers are present, each "sha256:" and 64 lowercase hex;
  2. the call hash: SHA-256 over the layer digests in the order registry,
     request, evidence, state, policies, upstream, result, each followed
     by "\\n", is the footprint's "hash";
  3. the request layer: SHA-256 of the RFC 8785 (JCS) form of
     {"tool": TOOL, "arguments": ARGUMENTS} is layers.request;
  4. the fields the layers repeat agree with them: identity is the
     registry layer, upstream.tool_digest the upstream layer, result the
     result layer, and discovery (when present) the evidence layer;
  5. the state layer: in a session (SPEC section 15), SHA-256 of the JCS
     form of the footprint's "read" ({"facts", "now", "session",
     "state"}); outside one (no "read"), SHA-256 of "{}".

Exit status 0 when all hold, 1 with a message on stderr when one does not,
2 on a usage error.
"""

import hashlib
import json
import math
import sys
from decimal import Decimal

# SPEC section 14's order; the call hash covers the layers in it.
LAYERS = ["registry", "request", "evidence", "state", "policies", "upstream", "result"]
MAX_BYTES = 64 << 20


class Failure(Exception):
    pass


# --- RFC 8785 (JSON Canonicalization Scheme) -------------------------------
#
# What is covered: objects with members sorted by their names' UTF-16 code
# units; no whitespace; strings as ECMAScript's JSON.stringify writes them
# (only '"', '\\' and U+0000..U+001F escaped, \b \f \n \r \t short, others
# \u00xx; everything else, non-ASCII included, as UTF-8: ensure_ascii=False);
# numbers as ECMAScript's Number.prototype.toString (shortest round-trip
# digits from Python's float repr, then ES6's choice between plain and
# exponent form). Integers are taken as IEEE-754 doubles, as JCS requires:
# an integer beyond 2^53 is rounded as ECMAScript would round it, and one
# beyond the double range is refused. Not covered: lone surrogates (not
# valid Unicode text; refused when encoding to UTF-8).


def jcs_number(x):
    if isinstance(x, bool):
        raise Failure("a boolean is not a number")
    try:
        x = float(x)
    except OverflowError:
        raise Failure("a number beyond the IEEE-754 double range") from None
    if math.isnan(x) or math.isinf(x):
        raise Failure("NaN and infinities are not JSON")
    if x == 0:
        return "0"  # -0 too
    sign = "-" if x < 0 else ""
    # repr gives the shortest digits that round-trip, as ES6 requires.
    _, digits, exp = Decimal(repr(abs(x))).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    s = "".join(map(str, digits))
    k = len(s)
    n = k + exp  # the value is 0.s times 10^n
    if k <= n <= 21:
        out = s + "0" * (n - k)
    elif 0 < n <= 21:
        out = s[:n] + "." + s[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + s
    else:
        e = n - 1
        out = s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def jcs_string(s):
    out = ['"']
    for ch in s:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ord(ch) < 0x20:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs_text(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, str):
        return jcs_string(v)
    if isinstance(v, (int, float)):
        return jcs_number(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs_text(e) for e in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs_string(k) + ":" + jcs_text(v[k]) for k in keys) + "}"
    raise Failure(f"{type(v).__name__} is not JSON")


def jcs(v):
    """The RFC 8785 bytes of a decoded JSON value."""
    try:
        return jcs_text(v).encode("utf-8")
    except UnicodeEncodeError:
        raise Failure("a string holds a lone surrogate") from None


# --- the call footprint -----------------------------------------------------


def sha256(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def is_digest(d):
    return isinstance(d, str) and len(d) == 71 and d.startswith("sha256:") and all(c in "0123456789abcdef" for c in d[7:])


def call_hash(layers):
    """SPEC section 14's call hash of a footprint's layers."""
    return sha256("".join(layers[k] + "\n" for k in LAYERS).encode())


def request_layer(tool, arguments):
    return sha256(jcs({"tool": tool, "arguments": arguments}))


def check_call(fp, want_hash=None):
    """Check a decoded call footprint; return its hash."""
    if not isinstance(fp, dict):
        raise Failure("the footprint is not an object")
    h = fp.get("hash")
    if not is_digest(h):
        raise Failure(f"the footprint's hash {h!r} is not sha256:HEX")
    if want_hash is not None and h != want_hash:
        raise Failure(f"the footprint's hash {h} is not the subject's {want_hash}")
    layers = fp.get("layers")
    if not isinstance(layers, dict) or set(layers) != set(LAYERS):
        raise Failure(f"the footprint's layers are not the seven {', '.join(LAYERS)}")
    for k in LAYERS:
        if not is_digest(layers[k]):
            raise Failure(f"layer {k}: {layers[k]!r} is not sha256:HEX")
    recomputed = call_hash(layers)
    if recomputed != h:
        raise Failure(f"the footprint's layers hash to {recomputed}, not {h}")
    tool = fp.get("tool")
    if not isinstance(tool, str):
        raise Failure("the footprint has no tool")
    if "arguments" not in fp:
        raise Failure("the footprint has no arguments")
    req = request_layer(tool, fp["arguments"])
    if req != layers["request"]:
        raise Failure(f"tool and arguments hash to {req}, the request layer says {layers['request']}")
    upstream = fp.get("upstream")
    pairs = [
        ("identity", fp.get("identity"), "registry"),
        ("upstream.tool_digest", upstream.get("tool_digest") if isinstance(upstream, dict) else None, "upstream"),
        ("result", fp.get("result"), "result"),
    ]
    if fp.get("discovery") is not None:
        pairs.append(("discovery", fp["discovery"], "evidence"))
    read = fp.get("read")
    if read is not None and (not isinstance(read, dict) or set(read) != {"facts", "now", "session", "state"}):
        raise Failure("the footprint's read is not {facts, now, session, state}")
    pairs.append(("read", sha256(jcs(read)) if read is not None else sha256(b"{}"), "state"))
    for field, got, layer in pairs:
        if got != layers[layer]:
            raise Failure(f"{field} {got!r} differs from the {layer} layer {layers[layer]}")
    return h


def no_duplicates(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise Failure(f"duplicate key {k!r}")
        obj[k] = v
    return obj


def loads(b, what):
    try:
        return json.loads(b, object_pairs_hook=no_duplicates)
    except (ValueError, UnicodeDecodeError) as e:
        raise Failure(f"{what} is not JSON: {e}") from None


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise Failure(f"{argv[1]} is over {MAX_BYTES} bytes")
        h = check_call(loads(data, argv[1]))
    except (Failure, OSError) as e:
        print(f"verify-call: FAIL: {e}", file=sys.stderr)
        return 1
    print(f"OK: call {h} (request and state layers and call hash recomputed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
